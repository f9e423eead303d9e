# C declarations for timings.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.util.clock cimport monotonic


cdef class Timings:
    cdef public double call_start
    cdef public double queue
    cdef public double dns
    cdef public double connect
    cdef public double tls
    cdef public bint reused
    cdef public object remote_address
    cdef public double request_start
    cdef public double request_end
    cdef public double first_byte_at
    cdef public double body_end


cdef double _between(double start, double end)


@cython.locals(t=Timings)
cpdef Timings new_timings(double call_start, double queue)
