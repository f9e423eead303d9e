# C declarations for retry_follow_up.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal._sync.chain cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal.core.client_core cimport ClientCore
from fastnet._internal.connection.connection_user cimport ConnectionUser
from fastnet.request cimport Request
from fastnet.response cimport Response


cdef class RetryAndFollowUpInterceptor(InternalInterceptor):
    cdef public ClientCore client

    @cython.locals(call=ConnectionUser, client=ClientCore, follow_ups=int, response=Response,
                   follow_up=Request, prior=Response, request=Request)
    cpdef Response intercept(self, RealInterceptorChain chain)


cpdef bint recover(ClientCore client, object exc, ConnectionUser call, Request request) except -1
