# C declarations for call_state.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.core.client_core cimport ClientCore
from fastnet._internal.connection.connection_user cimport ConnectionUser
from fastnet._internal._sync.real_connection cimport RealConnection
from fastnet.request cimport Request


cdef class CallState(ConnectionUser):
    cdef public ClientCore client
    cdef public Request request
    cdef public bint executed
    cdef public bint finished
    cdef public bint returned
    cdef public object wakeup
    cdef public object loop
    cdef public object thread
    cdef public object task
    cdef public object timer
    cdef public bint interrupting
    cdef object __weakref__

    cpdef object canceled_error(self, object request)

    @cython.locals(conn=RealConnection, was_fresh=bint)
    cpdef exchange_failed(self, object exc, object exchange)

    cpdef exchange_done(self, RealConnection conn, bint reusable)
    cpdef body_failed(self, object exc, RealConnection conn)

    @cython.locals(conn=RealConnection, reusable=bint)
    cpdef release_connection(self)
    cpdef end(self)
    cpdef fail(self, object exc)


cpdef init_state(CallState call, ClientCore client, Request request)
