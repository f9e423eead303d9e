# C declarations for bridge.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet.headers cimport Headers, headers_from_list
from fastnet._internal._sync.chain cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal.core.client_core cimport ClientCore
from fastnet._internal._sync.exchange cimport Exchange
from fastnet.request cimport Request, RequestBody
from fastnet.response cimport Response


cdef class BridgeInterceptor(InternalInterceptor):
    cdef public ClientCore client
    cdef public dict defaults

    cpdef Headers default_headers(self, object url)

    @cython.locals(request=Request, network_request=Request, gzip_added=bint)
    cpdef Response intercept(self, RealInterceptorChain chain)

    @cython.locals(user=Headers)
    cpdef tuple bridge_request(self, Request request)

    @cython.locals(exchange=Exchange)
    cpdef Response bridge_response(self, Request request, Response response, bint gzip_added)

    @cython.locals(user=Headers, body=RequestBody)
    cpdef tuple build_headers(self, Request request, object cookies)
