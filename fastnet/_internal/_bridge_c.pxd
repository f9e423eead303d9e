# Declarations that compile _bridge_py.py as the typed module _bridge_c (Cython pure-Python mode).
cimport cython
from fastnet._headers_c cimport Headers, headers_from_list
from fastnet._internal._chain_c cimport InternalInterceptor, RealInterceptorChain
from fastnet._internal._client_core_c cimport ClientCore
from fastnet._internal.http1._exchange_c cimport Exchange
from fastnet._request_c cimport Request, RequestBody
from fastnet._response_c cimport Response


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
