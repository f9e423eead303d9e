# Declarations that turn _pool_py.py into a typed cdef class (Cython pure-Python mode).
cimport cython


cdef class RealConnectionPool:
    cdef public int max_idle
    cdef public double keep_alive
    cdef public int max_per_host
    cdef public dict idle
    cdef public dict order
    cdef public dict counts
    cdef public object lock
    cdef public object cond
    cdef public bint closed

    @cython.locals(stack=list, keep_alive=double)
    cpdef object acquire(self, object address, double now)
    cpdef reserve(self, object host, double deadline)
    cpdef unreserve(self, object host)
    cpdef register(self, object conn)
    @cython.locals(now=double, stack=list)
    cpdef release(self, object conn, bint reusable)
    @cython.locals(order=dict)
    cdef object _evict(self, double now)
    cdef object _idle_victim(self, object host)
    cdef _remove_idle(self, object conn)
    cdef _forget(self, object conn)
    cdef _decrement(self, object host)
    cpdef int evict_all(self)
    cpdef int cleanup(self)
    cpdef int connection_count(self)
    cpdef int idle_connection_count(self)
    cpdef close(self)
    @cython.locals(limit=int)
    cpdef bint wait_for_slot(self, object address, double deadline) except -1
    @cython.locals(wait=double)
    cdef _wait_for_release(self, object host, double deadline)
