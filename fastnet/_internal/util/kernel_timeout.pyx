# cython: language_level=3
"""A kernel socket timeout set from seconds, with ``setsockopt(2)`` on the descriptor.

Compiled twin of ``_kernel_timeout_py`` (whose docstring says why); import through
``fastnet._internal.util.kernel_timeout``. Compiled units ``cimport`` ``set_kernel_timeout`` from
``_kernel_timeout_c.pxd``.
"""

from cpython.exc cimport PyErr_SetFromErrno
from posix.time cimport timeval

cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    int SOL_SOCKET
    int setsockopt(int fd, int level, int optname, const void *optval, socklen_t optlen)

__all__ = ["set_kernel_timeout"]


cpdef set_kernel_timeout(object sock, int optname, double seconds):
    """Set ``optname`` (``SO_RCVTIMEO`` or ``SO_SNDTIMEO``) of ``sock`` to ``seconds``; 0 or less means
    no timeout, and a positive value is at least one microsecond (a zero ``timeval`` would mean none).
    Raises ``OSError`` as ``socket.setsockopt`` does (``EBADF`` on a closed socket)."""
    cdef timeval tv
    cdef int fd = sock.fileno()
    if seconds <= 0:
        tv.tv_sec = 0
        tv.tv_usec = 0
    else:
        tv.tv_sec = <long>seconds
        tv.tv_usec = <long>((seconds - tv.tv_sec) * 1000000)
        if tv.tv_sec == 0 and tv.tv_usec == 0:
            tv.tv_usec = 1
    if setsockopt(fd, SOL_SOCKET, optname, &tv, sizeof(tv)) != 0:
        PyErr_SetFromErrno(OSError)
