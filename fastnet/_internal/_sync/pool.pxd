# C declarations for pool.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal._sync.real_connection cimport RealConnection


cdef class RealConnectionPool:
    cdef public int max_idle
    cdef public double keep_alive
    cdef public int max_per_host
    cdef public dict idle
    cdef public dict order
    cdef public dict counts
    cdef public dict live
    cdef public object abandoned
    cdef public Py_ssize_t discards
    cdef public object lock
    cdef public object cond
    cdef readonly Py_ssize_t sleepers

    @cython.locals(stack=list, keep_alive=double, conn=RealConnection, found=RealConnection)
    cpdef RealConnection acquire(self, object address, double now)

    @cython.locals(victim=RealConnection)
    cpdef reserve(self, object host, double deadline)
    cpdef unreserve(self, object host)
    cpdef register(self, RealConnection conn)
    cpdef discard_later(self, RealConnection conn)
    cdef _settle(self)

    @cython.locals(now=double, stack=list, c=RealConnection)
    cpdef release(self, RealConnection conn, bint reusable)

    @cython.locals(order=dict, oldest=RealConnection)
    cdef object _evict(self, double now)

    @cython.locals(conn=RealConnection)
    cdef object _idle_victim(self, object host)
    cdef _remove_idle(self, RealConnection conn)
    cdef _forget(self, RealConnection conn)
    cdef _decrement(self, object host)

    @cython.locals(conn=RealConnection)
    cpdef int evict_all(self)

    @cython.locals(conn=RealConnection)
    cpdef int cleanup(self)
    cpdef int connection_count(self)
    cpdef int idle_connection_count(self)

    cpdef int close_all(self)

    @cython.locals(conn=RealConnection, victims=list)
    cpdef int close_some(self, list conns)

    @cython.locals(limit=int)
    cpdef bint wait_for_slot(self, object address, double deadline) except -1

    @cython.locals(limit=int)
    cpdef int slot_state(self, object address) except -1

    @cython.locals(free=Py_ssize_t, conn=RealConnection)
    cpdef Py_ssize_t room(self, object host) except -1

    @cython.locals(limit=int, count=Py_ssize_t, victim=RealConnection)
    cpdef bint try_reserve(self, object host) except -1
    cpdef slot_freed(self, object host)

    @cython.locals(wait=double)
    cdef _wait_for_release(self, object host, double deadline)
    cpdef settle(self)
