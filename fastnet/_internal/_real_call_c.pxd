# Declarations that compile _real_call_py.py as the typed module _real_call_c (Cython pure-Python mode).
cimport cython
from fastnet._internal._clock_c cimport monotonic
from fastnet._headers_c cimport Headers
from fastnet._internal._chain_c cimport RealInterceptorChain, first_chain
from fastnet._internal._client_core_c cimport ClientCore
from fastnet._internal.connection._connection_user_c cimport ConnectionUser
from fastnet._internal.connection._real_connection_c cimport RealConnection
from fastnet._internal.http1._exchange_c cimport Exchange
from fastnet._request_c cimport Request, make_request
from fastnet._response_c cimport Response


cdef class RealCall(ConnectionUser):
    cdef public ClientCore client
    cdef public Request request
    cdef public bint executed
    cdef public bint finished
    cdef public bint returned
    cdef public object wakeup
    cdef object __weakref__

    @cython.locals(running=dict)
    cpdef Response execute(self)

    @cython.locals(client=ClientCore, chain=RealInterceptorChain, response=Response, started=double)
    cpdef Response run(self)
    cpdef object canceled_error(self, object request)

    @cython.locals(conn=RealConnection, was_fresh=bint)
    cpdef exchange_failed(self, object exc, object exchange)

    cpdef exchange_done(self, RealConnection conn, bint reusable)
    cpdef body_failed(self, object exc, RealConnection conn)

    @cython.locals(conn=RealConnection, reusable=bint)
    cpdef release_connection(self)
    cpdef end(self)

    @cython.locals(conn=RealConnection)
    cpdef fail(self, object exc)


cdef _init_call(RealCall call, ClientCore client, Request request)


@cython.locals(call=RealCall)
cpdef RealCall new_call(ClientCore client, Request request)


@cython.locals(req=Request, call=RealCall, response=Response, cache=dict)
cpdef Response request(ClientCore client, object method, object url, object params=*, object headers=*,
                       object cookies=*, object body=*, object data=*, object files=*, object json=*,
                       object auth=*, object timeout=*, object follow_redirects=*, object proxy=*,
                       bint stream=*)


@cython.locals(call=RealCall, response=Response, cache=dict)
cpdef Response get(ClientCore client, object url, object params=*, object headers=*, object cookies=*,
                   object auth=*, object timeout=*, object follow_redirects=*, object proxy=*)
