# C declarations for happy_eyeballs.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.util.kernel_timeout cimport set_kernel_timeout
from fastnet.route cimport is_ip_literal

cdef int _AF_INET
cdef int _AF_INET6
cdef int _SOCK_STREAM
cdef int _SO_SNDTIMEO
cdef int _IPPROTO_TCP
cdef int _TCP_NODELAY
cdef object _C_SOCKET


cdef class _Attempt:
    cdef public object route
    cdef public object target
    cdef public object sock
    cdef public double deadline


@cython.locals(host=str)
cpdef tuple sockaddr_of(tuple target)
cpdef object new_socket(int family, object local_address)


@cython.locals(cooperative=bint)
cpdef tuple connect_one(object route, tuple target, double timeout, object on_failure, object on_socket,
                        object name, object local_address)
cpdef object connect_error(int code)
