# C declarations for real_call.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet._internal.util.clock cimport monotonic
from fastnet.headers cimport Headers
from fastnet._internal._sync.chain cimport RealInterceptorChain, first_chain
from fastnet._internal.core.call_state cimport CallState, init_state
from fastnet._internal.core.client_core cimport ClientCore
from fastnet._internal._sync.real_connection cimport RealConnection
from fastnet.request cimport Request, make_request
from fastnet.response cimport Response


cdef class RealCall(CallState):
    @cython.locals(running=dict)
    cpdef Response execute(self)

    @cython.locals(client=ClientCore, chain=RealInterceptorChain, response=Response, started=double)
    cpdef Response run(self)

    cpdef end(self)

    @cython.locals(conn=RealConnection)
    cpdef fail(self, object exc)


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
