# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The load generator's event loop, compiled twin: C sockets, ``epoll`` and the compiled parser.

Theory of operation: the same loop as the pure twin ``_loop_py`` (which documents the slots, the
timetable, the connection states and every decision; this file makes them in the same order). What
differs is only how: connection state lives in a C array of structs, plain connections are C file
descriptors (``socket``, non-blocking ``connect``, ``send`` and ``recv`` into one shared buffer, no Python
socket object), readiness comes from ``epoll_pwait2`` (a nanosecond timeout, so an open-loop send
leaves on time; ``epoll_wait`` and milliseconds where the kernel lacks it) with the GIL released, time from
``clock_gettime(CLOCK_MONOTONIC)`` (the clock of ``time.monotonic_ns``), a body's rest is dropped by the
kernel uncopied (``recv`` with ``MSG_TRUNC``, as in the pure twin), and responses go through the
compiled ``ResponseParser``'s C method table (``feed_from``, ``read_head``, ``read_body``,
``skip_body_bytes``). Connections prepared elsewhere (TLS, tunnels) arrive as Python socket objects; a
plain one is then driven through its file descriptor, a TLS one through the object's methods.

Latencies are counted straight into the ``hdrh`` histogram's own counts array (``Recorder``): the index
is the one ``HdrHistogram.get_counts_array_index`` computes, total, min and max are handed to the
histogram object by ``sync()``. ``tests/load/test_loop.py`` holds the two recorders equal.
"""

import collections
import ctypes
import errno as errno_module
import os
import ssl

from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.exc cimport PyErr_CheckSignals
from libc.errno cimport errno, EAGAIN, EINPROGRESS, EINTR
from libc.stdint cimport int64_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.math cimport ceil
from libc.string cimport memset, memmove
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC
from posix.unistd cimport close, read, write

from fastnet._internal.http1.parser cimport ResponseParser
from fastnet.exceptions import ConnectionClosedError, ProtocolError

__all__ = [
    "BUSY",
    "CHECK_NS",
    "CLOSED",
    "CONNECTING",
    "HEAD_READ",
    "IMPLEMENTATION",
    "MAX_WAIT_NS",
    "OPEN_BACKOFF_NS",
    "READY",
    "RECV_SIZE",
    "SETUP",
    "Engine",
    "Recorder",
]


cdef extern from "<sys/epoll.h>" nogil:
    ctypedef union epoll_data_t:
        void* ptr
        int fd
        uint32_t u32
        uint64_t u64

    cdef struct epoll_event:
        uint32_t events
        epoll_data_t data

    int epoll_create1(int flags)
    int epoll_ctl(int epfd, int op, int fd, epoll_event* event)
    int epoll_wait(int epfd, epoll_event* events, int maxevents, int timeout)
    enum:
        EPOLLIN
        EPOLLOUT
        EPOLLERR
        EPOLLHUP
        EPOLL_CTL_ADD
        EPOLL_CTL_MOD
        EPOLL_CTL_DEL
        EPOLL_CLOEXEC


cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t

    cdef struct sockaddr:
        pass

    cdef struct sockaddr_storage:
        pass

    int socket(int domain, int type, int protocol)
    int connect(int fd, const sockaddr* addr, socklen_t len)
    ssize_t send(int fd, const void* buf, size_t n, int flags)
    ssize_t recv(int fd, void* buf, size_t n, int flags)
    int getsockopt(int fd, int level, int name, void* value, socklen_t* len)
    int setsockopt(int fd, int level, int name, const void* value, socklen_t len)
    enum:
        AF_INET
        AF_INET6
        SOCK_STREAM
        SOCK_NONBLOCK
        SOCK_CLOEXEC
        SOL_SOCKET
        SO_ERROR
        MSG_NOSIGNAL
        MSG_TRUNC


cdef extern from "<netinet/in.h>" nogil:
    ctypedef uint32_t in_addr_t

    cdef struct in_addr:
        in_addr_t s_addr

    cdef struct in6_addr:
        pass

    cdef struct sockaddr_in:
        unsigned short sin_family
        unsigned short sin_port
        in_addr sin_addr

    cdef struct sockaddr_in6:
        unsigned short sin6_family
        unsigned short sin6_port
        in6_addr sin6_addr

    unsigned short htons(unsigned short value)
    enum:
        IPPROTO_TCP


cdef extern from "<netinet/tcp.h>" nogil:
    enum:
        TCP_NODELAY


cdef extern from "<arpa/inet.h>" nogil:
    int inet_pton(int af, const char* src, void* dst)


cdef extern from "<fcntl.h>" nogil:
    enum:
        O_NONBLOCK
        O_CLOEXEC


cdef extern from "<unistd.h>" nogil:
    int pipe2(int* fds, int flags)


cdef extern from "<sys/prctl.h>" nogil:
    int prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5)
    enum:
        PR_SET_TIMERSLACK
        PR_GET_TIMERSLACK


cdef extern from *:
    """
    #include <errno.h>
    #include <sys/epoll.h>
    #include <sys/syscall.h>
    #include <time.h>
    #include <unistd.h>

    /* epoll_wait with a nanosecond timeout (epoll_pwait2, Linux 5.11), else milliseconds rounded up. */
    static int fastnet_epoll_wait_ns(int ep, struct epoll_event *events, int n, long long ns) {
    #ifdef SYS_epoll_pwait2
        static int unavailable = 0;
        if (!unavailable) {
            struct timespec ts;
            long r;
            ts.tv_sec = (time_t)(ns / 1000000000LL);
            ts.tv_nsec = (long)(ns % 1000000000LL);
            r = syscall(SYS_epoll_pwait2, ep, events, n, &ts, NULL, 0);
            if (r >= 0 || (errno != ENOSYS && errno != EPERM)) {
                return (int)r;
            }
            unavailable = 1;
        }
    #endif
        return epoll_wait(ep, events, n, (int)((ns + 999999LL) / 1000000LL));
    }
    """
    int fastnet_epoll_wait_ns(int ep, epoll_event* events, int n, long long ns) nogil
    int __builtin_clzll(unsigned long long value) nogil


IMPLEMENTATION = "c"

cdef enum:
    S_CLOSED = 0
    S_CONNECTING = 1
    S_SETUP = 2
    S_READY = 3
    S_BUSY = 4
    MAX_EVENTS = 256

cdef uint32_t WAKE = 0xFFFFFFFF

CLOSED = S_CLOSED
CONNECTING = S_CONNECTING
SETUP = S_SETUP
READY = S_READY
BUSY = S_BUSY

#: How often deadlines are checked (ns).
CHECK_NS = 10_000_000
#: Size of the receive buffer all connections share.
RECV_SIZE = 131072
#: The most a read takes while a response head is awaited: a big body's rest is then skipped uncopied.
HEAD_READ = 4096
#: The longest the loop waits for events before it looks at the clock again (ns).
MAX_WAIT_NS = 1_000_000_000
#: How long no connection is opened after opening one failed at once (ns).
OPEN_BACKOFF_NS = 10_000_000

cdef int64_t _CHECK_NS = CHECK_NS
cdef int64_t _MAX_WAIT_NS = MAX_WAIT_NS
cdef int64_t _OPEN_BACKOFF_NS = OPEN_BACKOFF_NS
cdef Py_ssize_t _RECV_SIZE = RECV_SIZE
cdef Py_ssize_t _HEAD_READ = HEAD_READ
cdef int BODY_NONE = 0
cdef int BODY_LENGTH = 1
_NO_DATA = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
_SSLSocket = ssl.SSLSocket


cdef inline int64_t _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


def _errno_name(int code):
    return errno_module.errorcode.get(code, f"errno {code}")


_RESOURCE_ERRNOS = (errno_module.EMFILE, errno_module.ENFILE, errno_module.ENOBUFS, errno_module.ENOMEM)


def _resource_errno(error):
    """The errno of running out of descriptors or memory among ``error`` and its causes, else 0."""
    for _ in range(8):
        if error is None:
            break
        code = getattr(error, "errno", None)
        if code in _RESOURCE_ERRNOS:
            return int(code)
        error = error.__cause__ or error.__context__
    return 0


cdef class Recorder:
    """Records values into an ``hdrh`` histogram (clamped to its highest trackable value), counting in
    C into the histogram's own counts array; ``sync()`` makes the histogram object current."""

    cdef readonly object histogram
    cdef uint64_t* _counts
    cdef Py_ssize_t _len
    cdef int _unit
    cdef int _half_mag
    cdef int64_t _half
    cdef uint64_t _mask
    cdef readonly int64_t highest
    cdef int64_t _added
    cdef int64_t _lo
    cdef int64_t _hi

    def __init__(self, histogram):
        if int(histogram.word_size) != 8:
            raise ValueError("Recorder needs a histogram with 64-bit counts")
        counts = histogram.counts
        if ctypes.sizeof(counts) != 8 * int(histogram.counts_len):
            raise ValueError("unexpected layout of the histogram's counts")
        self.histogram = histogram
        self._counts = <uint64_t*><uintptr_t>ctypes.addressof(counts)
        self._len = int(histogram.counts_len)
        self._unit = int(histogram.unit_magnitude)
        self._half_mag = int(histogram.sub_bucket_half_count_magnitude)
        self._half = int(histogram.sub_bucket_half_count)
        self._mask = int(histogram.sub_bucket_mask)
        self.highest = int(histogram.highest_trackable_value)
        self._added = 0
        self._lo = -1
        self._hi = -1

    cdef inline void put(self, int64_t value) noexcept:
        cdef int bucket
        cdef int64_t sub, index
        if value < 0:
            value = 0
        elif value > self.highest:
            value = self.highest
        bucket = 64 - __builtin_clzll(<unsigned long long>value | self._mask)
        bucket -= self._unit + self._half_mag + 1
        sub = value >> (bucket + self._unit)
        index = ((<int64_t>bucket + 1) << self._half_mag) + (sub - self._half)
        if index < 0 or index >= self._len:
            return
        self._counts[index] += 1
        self._added += 1
        if self._lo < 0 or value < self._lo:
            self._lo = value
        if value > self._hi:
            self._hi = value

    def record(self, value):
        self.put(value)

    def sync(self):
        """Make the histogram object current (total count, min and max)."""
        h = self.histogram
        if self._added:
            h.total_count += self._added
            if self._lo < h.min_value:
                h.min_value = self._lo
            if self._hi > h.max_value:
                h.max_value = self._hi
        self._added = 0
        self._lo = -1
        self._hi = -1


cdef struct Conn:
    int fd
    int state
    int group
    bint pyobj          # the socket is a Python object (prepared elsewhere) in _socks
    bint tls            # ... and I/O goes through its methods
    bint in_head
    bint skipping
    bint keep_alive
    bint writing
    int status
    int64_t intended
    int64_t started
    int64_t sent_at
    int64_t first_byte
    int64_t deadline
    int64_t free_since
    int64_t remaining
    Py_ssize_t out_off


cdef class Engine:
    """Drives ``len(connections)`` connections; see the pure twin ``_loop_py.Engine``."""

    cdef Conn* _c
    cdef int _n
    cdef list _parsers
    cdef list _socks
    cdef list _outs
    cdef list _requests
    cdef list _addresses
    cdef list _labels
    cdef int64_t* _rr
    cdef int _groups
    cdef sockaddr_storage* _addrs
    cdef socklen_t* _addrlens
    cdef int* _families
    cdef int* _ready
    cdef int _nready
    cdef int* _closed
    cdef int _nclosed
    cdef int64_t _total
    cdef int64_t _duration_ns
    cdef double _interval
    cdef int64_t _timeout_ns
    cdef double _timeout_s
    cdef bint _head
    cdef bint _keepalive
    cdef Recorder _latency
    cdef Recorder _first_byte
    cdef Recorder _response
    cdef Recorder _connect
    cdef Recorder _dns
    cdef Recorder _tls
    cdef Recorder _lag
    cdef object _prepare
    cdef bytearray _buf
    cdef char* _bufp
    cdef int _ep
    cdef int _wake_r
    cdef int _wake_w
    cdef epoll_event _events[MAX_EVENTS]
    cdef object _delivered
    cdef int64_t _statuses[1000]
    cdef dict _errors
    cdef int64_t _start
    cdef int64_t _end
    cdef int64_t _slot
    cdef int64_t _next_check
    cdef int64_t _open_after
    cdef bint _probing
    cdef bint _stop_requested
    cdef bint _finished
    cdef bint _shut
    cdef public str reason
    cdef public int64_t dispatched
    cdef public int64_t completed
    cdef public int64_t failed
    cdef public int64_t bytes_received
    cdef public int64_t connections_opened
    cdef public int64_t abandoned
    cdef public int64_t backlog
    cdef public int64_t started_ns
    cdef public int64_t ended_ns

    def __cinit__(self):
        self._c = NULL
        self._rr = NULL
        self._addrs = NULL
        self._addrlens = NULL
        self._families = NULL
        self._ready = NULL
        self._closed = NULL
        self._ep = -1
        self._wake_r = -1
        self._wake_w = -1
        self._shut = True

    def __init__(self, groups, connections, *, total, duration, rate, timeout, head, recorders, prepare=None,
                 keepalive=True):
        cdef int i, g
        cdef int fds[2]
        cdef epoll_event ev
        cdef sockaddr_in* a4
        cdef sockaddr_in6* a6
        if self._c != NULL:
            raise RuntimeError("Engine.__init__ called twice")
        connections = list(connections)
        if not connections:
            raise ValueError("at least one connection is needed")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if rate < 0:
            raise ValueError("rate must not be negative")
        self._requests = []
        self._addresses = []
        self._labels = []
        for group in groups:
            requests = list(group.requests)
            if not requests:
                raise ValueError("a group needs at least one request")
            for data in requests:
                if not isinstance(data, bytes):
                    raise TypeError("requests must be bytes")
            self._requests.append(requests)
            self._addresses.append(group.address)
            self._labels.append(str(group.label))
        self._groups = len(self._requests)
        for g in connections:
            if not 0 <= g < self._groups:
                raise ValueError(f"connection group {g} does not exist")
            if self._addresses[g] is None and prepare is None:
                raise ValueError("a group without an address needs prepare()")
        self._n = len(connections)
        self._c = <Conn*>calloc(self._n, sizeof(Conn))
        self._ready = <int*>calloc(self._n, sizeof(int))
        self._closed = <int*>calloc(self._n, sizeof(int))
        self._rr = <int64_t*>calloc(self._groups + 1, sizeof(int64_t))
        self._addrs = <sockaddr_storage*>calloc(self._groups + 1, sizeof(sockaddr_storage))
        self._addrlens = <socklen_t*>calloc(self._groups + 1, sizeof(socklen_t))
        self._families = <int*>calloc(self._groups + 1, sizeof(int))
        if (self._c == NULL or self._ready == NULL or self._closed == NULL or self._rr == NULL
                or self._addrs == NULL or self._addrlens == NULL or self._families == NULL):
            raise MemoryError()
        for g in range(self._groups):
            address = self._addresses[g]
            if address is None:
                continue
            family, host, port = address
            host_b = str(host).encode("ascii")
            if family == AF_INET:
                a4 = <sockaddr_in*>&self._addrs[g]
                a4.sin_family = AF_INET
                a4.sin_port = htons(<unsigned short>int(port))
                if inet_pton(AF_INET, host_b, &a4.sin_addr) != 1:
                    raise ValueError(f"not an IPv4 address: {host!r}")
                self._addrlens[g] = sizeof(sockaddr_in)
            elif family == AF_INET6:
                a6 = <sockaddr_in6*>&self._addrs[g]
                a6.sin6_family = AF_INET6
                a6.sin6_port = htons(<unsigned short>int(port))
                if inet_pton(AF_INET6, host_b, &a6.sin6_addr) != 1:
                    raise ValueError(f"not an IPv6 address: {host!r}")
                self._addrlens[g] = sizeof(sockaddr_in6)
            else:
                raise ValueError(f"unsupported address family {family!r}")
            self._families[g] = family
        self._parsers = [None] * self._n
        self._socks = [None] * self._n
        self._outs = [None] * self._n
        for i in range(self._n):
            self._c[i].fd = -1
            self._c[i].state = S_CLOSED
            self._c[i].group = connections[i]
            self._closed[i] = self._n - 1 - i
        self._nclosed = self._n
        self._nready = 0
        self._total = total
        self._duration_ns = <int64_t>(duration * 1e9)
        self._interval = 1e9 / rate if rate > 0 else 0.0
        self._timeout_ns = <int64_t>(timeout * 1e9)
        self._timeout_s = timeout
        self._head = head
        self._keepalive = keepalive
        self._latency = Recorder(recorders.latency)
        self._first_byte = Recorder(recorders.first_byte)
        self._response = Recorder(recorders.response)
        self._connect = Recorder(recorders.connect)
        self._dns = Recorder(recorders.dns)
        self._tls = Recorder(recorders.tls)
        self._lag = Recorder(recorders.lag)
        self._prepare = prepare
        self._buf = bytearray(_RECV_SIZE)
        self._bufp = PyByteArray_AS_STRING(self._buf)
        self._ep = epoll_create1(EPOLL_CLOEXEC)
        if self._ep < 0:
            raise OSError(errno, os.strerror(errno))
        if pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0:
            raise OSError(errno, os.strerror(errno))
        self._wake_r = fds[0]
        self._wake_w = fds[1]
        ev.events = EPOLLIN
        ev.data.u64 = 0
        ev.data.u32 = WAKE
        if epoll_ctl(self._ep, EPOLL_CTL_ADD, self._wake_r, &ev) != 0:
            raise OSError(errno, os.strerror(errno))
        self._delivered = collections.deque()
        memset(self._statuses, 0, sizeof(self._statuses))
        self._errors = {}
        self._start = 0
        self._end = 0
        self._slot = 0
        self._next_check = 0
        self._open_after = 0
        self._probing = False
        self._stop_requested = False
        self._finished = False
        self._shut = False
        self.reason = ""
        self.dispatched = 0
        self.completed = 0
        self.failed = 0
        self.bytes_received = 0
        self.connections_opened = 0
        self.abandoned = 0
        self.backlog = 0
        self.started_ns = 0
        self.ended_ns = 0

    def __dealloc__(self):
        cdef int i
        if self._c != NULL:
            for i in range(self._n):
                if self._c[i].fd >= 0 and not self._c[i].pyobj:
                    close(self._c[i].fd)
            free(self._c)
        if self._ep >= 0 and not self._shut:
            close(self._ep)
            close(self._wake_r)
            close(self._wake_w)
        free(self._ready)
        free(self._closed)
        free(self._rr)
        free(self._addrs)
        free(self._addrlens)
        free(self._families)

    # -- public ---------------------------------------------------------------------------------------

    @property
    def in_flight(self):
        return self.dispatched - self.completed - self.failed

    @property
    def finished(self):
        return self._finished

    def statuses(self):
        """Completed responses by status code."""
        cdef int i
        return {i: self._statuses[i] for i in range(1000) if self._statuses[i]}

    def errors(self):
        """Failed requests by error key: ``{key: (count, first message)}``."""
        return {key: (value[0], value[1]) for key, value in self._errors.items()}

    def stop(self):
        """End the run at the next turn of the loop (safe from a signal handler)."""
        self._stop_requested = True

    def deliver(self, int index, sock, error, phases):
        """Hand back a connection ``prepare(index, group)`` was asked for (any thread)."""
        cdef char x = b"x"
        if self._shut:
            if sock is not None:
                sock.close()
            return
        self._delivered.append((index, sock, error, phases))
        write(self._wake_w, &x, 1)

    def run(self, int64_t until_ns):
        """Run until ``until_ns`` (``time.monotonic_ns()``) or the end of the run; True once it ended."""
        cdef int64_t now
        cdef int slack
        if self._finished:
            return True
        if self._shut:
            raise RuntimeError("the engine is closed")
        now = _now()
        if self._start == 0:
            self._start = now
            self.started_ns = now
            self._end = now + self._duration_ns if self._duration_ns > 0 else 0
            self._next_check = now + _CHECK_NS
        # the kernel may delay a timed wake-up by the thread's timer slack (50 µs by default): an
        # open-loop send would leave that late, so the slack is 1 ns while the loop runs
        slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)
        if slack > 1:
            prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
        try:
            self._loop(until_ns, now)
        finally:
            if slack > 1:
                prctl(PR_SET_TIMERSLACK, <unsigned long>slack, 0, 0, 0)
        self._latency.sync()
        self._first_byte.sync()
        self._response.sync()
        self._connect.sync()
        self._dns.sync()
        self._tls.sync()
        self._lag.sync()
        return self._finished

    cdef int _loop(self, int64_t until_ns, int64_t now) except -1:
        cdef int64_t wait, timeout
        cdef int n, j
        cdef uint32_t index, mask
        cdef Conn* c
        while True:
            PyErr_CheckSignals()
            if self._stop_requested:
                self._finish(now, "stopped")
                break
            if self._total >= 0 and self.completed + self.failed >= self._total:
                self._finish(now, "requests")
                break
            if self._end and now >= self._end:
                self._finish(now, "duration")
                break
            if now >= until_ns:
                break
            wait = self._dispatch(now)
            timeout = until_ns - now
            if self._end and self._end - now < timeout:
                timeout = self._end - now
            if wait >= 0 and wait < timeout:
                timeout = wait
            if self.dispatched - self.completed - self.failed > 0 and self._next_check - now < timeout:
                timeout = self._next_check - now
            if timeout < 0:
                timeout = 0
            if timeout > _MAX_WAIT_NS:
                timeout = _MAX_WAIT_NS
            with nogil:
                n = fastnet_epoll_wait_ns(self._ep, self._events, MAX_EVENTS, timeout)
            if n < 0:
                if errno != EINTR:
                    raise OSError(errno, os.strerror(errno))
                n = 0
            now = _now()
            for j in range(n):
                index = self._events[j].data.u32
                mask = self._events[j].events
                if index == WAKE:
                    self._drain_wake(now)
                    continue
                c = &self._c[index]
                if c.fd < 0:
                    continue  # closed earlier in this batch
                if c.state == S_CONNECTING:
                    self._on_connect(index, now)
                elif mask & (EPOLLOUT | EPOLLERR | EPOLLHUP) and c.writing:
                    self._write_more(index, now)
                else:
                    self._on_readable(index, now)
            if now >= self._next_check:
                self._check_deadlines(now)
                self._next_check = now + _CHECK_NS
        return 0

    def close(self):
        """Close every socket and the epoll instance; connections delivered later are closed on arrival."""
        cdef int i
        if self._shut:
            return
        self._shut = True
        for i in range(self._n):
            self._drop(i)
        while self._delivered:
            _index, sock, _error, _phases = self._delivered.popleft()
            if sock is not None:
                sock.close()
        close(self._ep)
        close(self._wake_r)
        close(self._wake_w)
        self._ep = -1

    # -- dispatch -------------------------------------------------------------------------------------

    cdef int64_t _dispatch(self, int64_t now) except -2:
        cdef int64_t intended, free_at
        cdef int i
        cdef Conn* c
        while True:
            if self._total >= 0 and self.dispatched >= self._total:
                return -1
            if self._end and now >= self._end:
                return -1
            if self._interval > 0:
                intended = self._start + <int64_t>(<double>self._slot * self._interval)
                if self._end and intended >= self._end:
                    return -1
                if intended > now:
                    return intended - now
            else:
                intended = now
            if self._nready:
                self._nready -= 1
                i = self._ready[self._nready]
            elif self._nclosed and now >= self._open_after:
                self._nclosed -= 1
                i = self._closed[self._nclosed]
            elif self._nclosed:
                return self._open_after - now
            else:
                return -1
            c = &self._c[i]
            if self._interval > 0:
                free_at = c.free_since if c.free_since > intended else intended
                self._lag.put((now - free_at) // 1000)
            self._slot += 1
            self.dispatched += 1
            c.intended = intended
            c.started = now
            c.deadline = now + self._timeout_ns
            if c.state == S_READY:
                self._send(i, now)
            else:
                self._open(i, now)
                if c.state == S_CLOSED or (self._probing and c.state == S_SETUP):
                    # failed at once, or out of descriptors in prepare(): look at the clock, back off
                    self._open_after = _now() + _OPEN_BACKOFF_NS
                    return _OPEN_BACKOFF_NS

    cdef int _register(self, int i, uint32_t events, int op) except -1:
        cdef epoll_event ev
        ev.events = events
        ev.data.u64 = 0
        ev.data.u32 = <uint32_t>i
        if epoll_ctl(self._ep, op, self._c[i].fd, &ev) != 0:
            raise OSError(errno, os.strerror(errno))
        return 0

    cdef int _open(self, int i, int64_t now) except -1:
        cdef Conn* c = &self._c[i]
        cdef int g = c.group
        cdef int fd, one = 1, r, code
        self._parsers[i] = ResponseParser()
        if self._addresses[g] is None:
            c.state = S_SETUP
            self._prepare(i, g)
            return 0
        c.started = _now()  # this connect's own start (a turn may open many)
        fd = socket(self._families[g], SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)
        if fd < 0:
            self._connect_failed(i, errno, now, "open a socket for")
            return 0
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))
        r = connect(fd, <sockaddr*>&self._addrs[g], self._addrlens[g])
        code = 0 if r == 0 else errno
        c.fd = fd
        c.pyobj = False
        c.tls = False
        if code == 0:
            self._register(i, EPOLLIN, EPOLL_CTL_ADD)
            self._connected(i, now)
        elif code == EINPROGRESS:
            c.state = S_CONNECTING
            self._register(i, EPOLLOUT, EPOLL_CTL_ADD)
        else:
            self._connect_failed(i, code, now)
        return 0

    cdef int _on_connect(self, int i, int64_t now) except -1:
        cdef int code = 0
        cdef socklen_t size = sizeof(code)
        if getsockopt(self._c[i].fd, SOL_SOCKET, SO_ERROR, &code, &size) != 0:
            code = errno
        if code != 0:
            self._connect_failed(i, code, now)
            return 0
        self._register(i, EPOLLIN, EPOLL_CTL_MOD)
        self._connected(i, now)
        return 0

    cdef int _connected(self, int i, int64_t now) except -1:
        self.connections_opened += 1
        self._connect.put((_now() - self._c[i].started) // 1000)
        self._send(i, now)
        return 0

    cdef int _connect_failed(self, int i, int code, int64_t now, str doing="connect to") except -1:
        _family, host, port = self._addresses[self._c[i].group]
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._fail(
            i,
            f"ConnectError ({_errno_name(code)})",
            f"{doing} {where} failed: [Errno {code}] {os.strerror(code)}",
            now,
        )
        return 0

    cdef int _drain_wake(self, int64_t now) except -1:
        cdef char junk[4096]
        cdef int i
        cdef Conn* c
        while read(self._wake_r, junk, sizeof(junk)) > 0:
            pass
        while self._delivered:
            index, sock, error, phases = self._delivered.popleft()
            i = index
            c = &self._c[i]
            if c.state != S_SETUP:
                if sock is not None:
                    sock.close()
                continue
            if phases is not None:
                dns, connect_us, tls = phases
                if dns >= 0:
                    self._dns.put(dns)
                if connect_us >= 0:
                    self._connect.put(connect_us)
                if tls >= 0:
                    self._tls.put(tls)
            if sock is None:
                text = str(error) if error is not None else "connection setup failed"
                key = type(error).__name__ if error is not None else "ConnectError"
                code = _resource_errno(error)
                if code:
                    key = f"{key} ({_errno_name(code)})"
                    self._probing = True
                self._fail(i, key, text, now)
                continue
            self._probing = False
            self.connections_opened += 1
            sock.setblocking(False)
            self._socks[i] = sock
            c.fd = sock.fileno()
            c.pyobj = True
            c.tls = isinstance(sock, _SSLSocket)
            self._register(i, EPOLLIN, EPOLL_CTL_ADD)
            self._send(i, now)
        return 0

    # -- one request ----------------------------------------------------------------------------------

    cdef int _send(self, int i, int64_t now) except -1:
        cdef Conn* c = &self._c[i]
        cdef int g = c.group
        cdef list requests = <list>self._requests[g]
        cdef bytes data = <bytes>requests[self._rr[g] % len(requests)]
        cdef Py_ssize_t size = PyBytes_GET_SIZE(data)
        cdef Py_ssize_t sent
        now = _now()  # the moment of this send, not of the turn of the loop
        self._rr[g] += 1
        c.state = S_BUSY
        c.sent_at = now
        c.first_byte = 0
        c.deadline = now + self._timeout_ns
        c.in_head = True
        c.skipping = False
        if c.tls:
            try:
                sent = self._socks[i].send(data)
            except _NO_DATA:
                sent = 0
            except OSError as exc:
                self._io_failed(i, exc.errno or 0, str(exc), "sending the request", now)
                return 0
        else:
            sent = send(c.fd, PyBytes_AS_STRING(data), size, MSG_NOSIGNAL)
            if sent < 0:
                if errno == EAGAIN or errno == EINTR:
                    sent = 0
                else:
                    self._io_failed(i, errno, "", "sending the request", now)
                    return 0
        if sent < size:
            self._outs[i] = data
            c.out_off = sent
            c.writing = True
            self._register(i, EPOLLOUT, EPOLL_CTL_MOD)
        return 0

    cdef int _write_more(self, int i, int64_t now) except -1:
        cdef Conn* c = &self._c[i]
        cdef bytes data = <bytes>self._outs[i]
        cdef Py_ssize_t sent
        if c.tls:
            try:
                sent = self._socks[i].send(memoryview(data)[c.out_off:])
            except _NO_DATA:
                return 0
            except OSError as exc:
                self._io_failed(i, exc.errno or 0, str(exc), "sending the request", now)
                return 0
        else:
            sent = send(c.fd, PyBytes_AS_STRING(data) + c.out_off, PyBytes_GET_SIZE(data) - c.out_off,
                        MSG_NOSIGNAL)
            if sent < 0:
                if errno == EAGAIN or errno == EINTR:
                    return 0
                self._io_failed(i, errno, "", "sending the request", now)
                return 0
        c.out_off += sent
        if c.out_off >= PyBytes_GET_SIZE(data):
            self._outs[i] = None
            c.out_off = 0
            c.writing = False
            self._register(i, EPOLLIN, EPOLL_CTL_MOD)
        return 0

    cdef int _on_readable(self, int i, int64_t now) except -1:
        cdef Conn* c = &self._c[i]
        cdef Py_ssize_t n
        cdef size_t want
        cdef bint done
        while True:
            if c.tls:
                try:
                    n = self._socks[i].recv_into(self._buf)
                except _NO_DATA:
                    return 0
                except OSError as exc:
                    if c.state == S_READY:
                        self._close(i)
                    else:
                        self._io_failed(i, exc.errno or 0, str(exc), "reading the response", now)
                    return 0
            else:
                if c.skipping:
                    want = <size_t>(c.remaining if c.remaining < _RECV_SIZE else _RECV_SIZE)
                    n = recv(c.fd, self._bufp, want, MSG_TRUNC)
                elif c.in_head and c.state == S_BUSY:
                    n = recv(c.fd, self._bufp, _HEAD_READ, 0)
                else:
                    n = recv(c.fd, self._bufp, _RECV_SIZE, 0)
                if n < 0:
                    if errno == EAGAIN or errno == EINTR:
                        return 0
                    if c.state == S_READY:
                        self._close(i)
                    else:
                        self._io_failed(i, errno, "", "reading the response", now)
                    return 0
            if c.state != S_BUSY:
                self._close(i)
                return 0
            self.bytes_received += n
            if c.first_byte == 0 and n > 0:
                c.first_byte = now
                self._first_byte.put((now - c.sent_at) // 1000)
            try:
                done = self._consume(i, n)
            except (ProtocolError, ConnectionClosedError) as exc:
                self._fail(i, type(exc).__name__, f"{exc} ({self._labels[c.group]})", now)
                return 0
            if done:
                self._complete(i, now)
                return 0
            if n == 0:
                self._fail(i, "ConnectionClosedError", "connection closed", now)
                return 0
            if c.tls:
                if self._socks[i].pending() == 0:
                    return 0
            elif not c.skipping:
                return 0

    cdef bint _consume(self, int i, Py_ssize_t n) except -1:
        cdef Conn* c = &self._c[i]
        cdef ResponseParser parser = <ResponseParser>self._parsers[i]
        cdef Py_ssize_t k
        cdef int status, mode
        cdef tuple head
        if c.skipping:
            if n == 0:
                parser.feed_from(self._buf, 0)
                parser.read_body()
                return False
            if n <= c.remaining:
                parser.skip_body_bytes(n)
                c.remaining -= n
                if c.remaining:
                    return False
                parser.read_body()
                return True
            k = <Py_ssize_t>c.remaining
            parser.skip_body_bytes(k)
            c.remaining = 0
            parser.read_body()
            parser.feed(self._buf[k:n])
            return True
        parser.feed_from(self._buf, n)
        if c.in_head:
            while True:
                obj = parser.read_head(self._head)
                if obj is None:
                    return False
                head = <tuple>obj
                status = head[0]
                if status >= 200 or status == 101:
                    break
            c.in_head = False
            c.status = status
            c.keep_alive = head[6]
            mode = head[4]
            if mode == BODY_NONE:
                return True
            if mode == BODY_LENGTH:
                body = parser.read_body()
                if body is None:
                    return True
                c.remaining = <int64_t>head[5] - len(body)
                if c.remaining == 0:
                    parser.read_body()
                    return True
                c.skipping = True
                return False
        while True:
            piece = parser.read_body()
            if piece is None:
                return True
            if not piece:
                return False

    cdef int _complete(self, int i, int64_t now) except -1:
        cdef Conn* c = &self._c[i]
        now = _now()  # after the last read and the parse, as a client would see it
        self._latency.put((now - c.intended) // 1000)
        self._response.put((now - c.sent_at) // 1000)
        self.completed += 1
        if 0 <= c.status < 1000:
            self._statuses[c.status] += 1
        if c.keep_alive and self._keepalive and c.status != 101:
            c.state = S_READY
            c.free_since = now
            self._ready[self._nready] = i
            self._nready += 1
        else:
            self._close(i)
            c.free_since = now
        return 0

    # -- failures -------------------------------------------------------------------------------------

    cdef int _io_failed(self, int i, int code, str text, str doing, int64_t now) except -1:
        key = f"ConnectionClosedError ({_errno_name(code)})" if code else "ConnectionClosedError"
        if code:
            text = os.strerror(code)
        self._fail(i, key, f"connection lost {doing}: {text} ({self._labels[self._c[i].group]})", now)
        return 0

    cdef int _fail(self, int i, str key, str example, int64_t now) except -1:
        self.failed += 1
        entry = self._errors.get(key)
        if entry is None:
            self._errors[key] = [1, example]
        else:
            entry[0] += 1
        self._close(i)
        self._c[i].free_since = now
        return 0

    cdef int _check_deadlines(self, int64_t now) except -1:
        cdef int i
        cdef Conn* c
        for i in range(self._n):
            c = &self._c[i]
            if c.deadline <= now and (c.state == S_BUSY or c.state == S_CONNECTING):
                if c.state == S_CONNECTING:
                    _family, host, port = self._addresses[c.group]
                    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
                    self._fail(
                        i, "ConnectTimeout", f"connect to {where} timed out after {self._timeout_s:g} s", now
                    )
                else:
                    self._fail(
                        i,
                        "ReadTimeout",
                        f"no complete response within {self._timeout_s:g} s ({self._labels[c.group]})",
                        now,
                    )
        return 0

    # -- connections ----------------------------------------------------------------------------------

    cdef int _drop(self, int i) except -1:
        cdef Conn* c = &self._c[i]
        cdef epoll_event ev
        if c.fd >= 0:
            if c.pyobj:
                epoll_ctl(self._ep, EPOLL_CTL_DEL, c.fd, &ev)
                sock = self._socks[i]
                self._socks[i] = None
                sock.close()
            else:
                close(c.fd)
            c.fd = -1
        c.pyobj = False
        c.tls = False
        self._parsers[i] = None
        self._outs[i] = None
        c.writing = False
        return 0

    cdef int _close(self, int i) except -1:
        cdef int j
        if self._c[i].state == S_READY:
            for j in range(self._nready):
                if self._ready[j] == i:
                    memmove(&self._ready[j], &self._ready[j + 1], (self._nready - j - 1) * sizeof(int))
                    self._nready -= 1
                    break
        self._drop(i)
        self._c[i].state = S_CLOSED
        self._closed[self._nclosed] = i
        self._nclosed += 1
        return 0

    cdef int _finish(self, int64_t now, str reason) except -1:
        cdef int64_t limit, due
        self._finished = True
        self.reason = reason
        self.ended_ns = now
        self.abandoned = self.dispatched - self.completed - self.failed
        if self._interval > 0 and (self._total < 0 or self.dispatched < self._total):
            limit = self._end if self._end and self._end < now else now
            if limit > self._start:
                due = <int64_t>ceil((limit - self._start) / self._interval)
            else:
                due = 0
            if self._total >= 0 and due > self._total:
                due = self._total
            self.backlog = due - self._slot if due > self._slot else 0
        return 0
