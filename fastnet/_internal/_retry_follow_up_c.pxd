# Declarations that compile _retry_follow_up_py.py as the typed module _retry_follow_up_c.
cimport cython
from fastnet._internal._chain_c cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal._client_core_c cimport ClientCore
from fastnet._internal.connection._connection_user_c cimport ConnectionUser
from fastnet._request_c cimport Request
from fastnet._response_c cimport Response


cdef class RetryAndFollowUpInterceptor(InternalInterceptor):
    cdef public ClientCore client

    @cython.locals(call=ConnectionUser, client=ClientCore, follow_ups=int, response=Response,
                   follow_up=Request, prior=Response, request=Request)
    cpdef Response intercept(self, RealInterceptorChain chain)


cpdef bint recover(ClientCore client, object exc, ConnectionUser call, Request request) except -1
