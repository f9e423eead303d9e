# C declarations for real_connection.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.http1.parser cimport ResponseParser


from fastnet._internal.util.kernel_timeout cimport set_kernel_timeout

cdef int _SO_RCVTIMEO
cdef int _SO_SNDTIMEO


cdef int _POLLIN
cdef int _POLLOUT


cdef class TlsIo:
    cdef public object sock
    cdef public object poller
    cdef public double timeout_ms
    cdef public bint sent

    cpdef set_timeout(self, double seconds)
    cpdef wait(self, int events, str operation)
    # last, so units compiled against the earlier declarations keep their offsets
    cdef public double write_timeout_ms
    cpdef set_write_timeout(self, double seconds)


cdef class RealConnection:
    cdef public object sock
    cdef public object sendall
    cdef public object recv_into
    cdef public object route
    cdef public object address
    cdef public ResponseParser parser
    cdef public bytearray buf
    cdef public double idle_at
    cdef public double created_at
    cdef public bint no_new_exchanges
    cdef public long long exchange_count
    cdef public double read_timeout
    cdef public double write_timeout
    cdef public bint is_tls
    cdef public object pool
    cdef public bint closed
    cdef public bint http_proxy
    cdef public object tls_version
    cdef public object proxy_authorization
    cdef public double dns_time
    cdef public double connect_time
    cdef public double tls_time
    cdef public object remote_address
    cdef public bint gives_tls_session
    cdef public object tls_sessions
    cdef public object tls_session_keys
    cdef public TlsIo tls_io
    cdef object __weakref__

    cpdef write(self, bytes data)
    cpdef drain(self)

    @cython.locals(n=Py_ssize_t)
    cpdef Py_ssize_t fill(self) except -1

    @cython.locals(received=Py_ssize_t)
    cpdef tuple receive_body(self, bytes head, Py_ssize_t total)
    cpdef set_timeouts(self, double read_timeout, double write_timeout)
    cpdef offer_tls_sessions(self, dict sessions, tuple keys)
    cpdef give_tls_session(self)
    cpdef bint is_healthy(self)
    cpdef close(self)
    cpdef shutdown(self)
