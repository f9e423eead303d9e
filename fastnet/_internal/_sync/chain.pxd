# C declarations for chain.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.connection.connection_user cimport ConnectionUser
from fastnet._internal._sync.exchange cimport Exchange
from fastnet.request cimport Request
from fastnet.response cimport Response


cdef class InternalInterceptor:
    cpdef Response intercept(self, RealInterceptorChain chain)


cdef class FunctionInterceptor(InternalInterceptor):
    cdef public object function

    cpdef Response intercept(self, RealInterceptorChain chain)


cdef class RealInterceptorChain:
    cdef public ConnectionUser call
    cdef public list interceptors
    cdef public Py_ssize_t index
    cdef public Request request
    cdef public Exchange exchange
    cdef public double connect_timeout
    cdef public double read_timeout
    cdef public double write_timeout
    cdef public int calls
    cdef public int follow_redirects

    @cython.locals(chain=RealInterceptorChain)
    cpdef RealInterceptorChain copy(self, Py_ssize_t index, Request request, Exchange exchange)

    @cython.locals(index=Py_ssize_t, exchange=Exchange, nxt=RealInterceptorChain,
                   internal=InternalInterceptor)
    cpdef Response proceed(self, Request request)


@cython.locals(chain=RealInterceptorChain)
cpdef RealInterceptorChain first_chain(ConnectionUser call, list interceptors, Request request,
                                       double connect_timeout, double read_timeout, double write_timeout)
