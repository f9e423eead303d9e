# C declarations for connection_user.py, which Cython compiles in place (pure-Python mode).
from fastnet._internal._sync.real_connection cimport RealConnection


cdef class ConnectionUser:
    cdef public object events
    cdef public bint canceled
    cdef public bint timed_out
    cdef public double deadline
    cdef public long long max_body_size
    cdef public RealConnection connection
    cdef public bint reusable
    cdef public object finder
    cdef public object exchange
    cdef public object last_failure
    cdef public object retry_route
    cdef public double started_at
    cdef public double queued

    cpdef object canceled_error(self, object request)
    cpdef exchange_done(self, RealConnection conn, bint reusable)
    cpdef body_failed(self, object exc, RealConnection conn)
    cpdef exchange_failed(self, object exc, object exchange)
    cpdef release_connection(self)
