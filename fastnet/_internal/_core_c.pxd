# Declarations that turn _core_py.py into typed cdef classes (Cython pure-Python mode).
# The .py stays the single source of truth; this file only adds C types. After editing either file,
# rebuild: FASTNET_BUILD_ONLY=fastnet._internal._core_c python setup.py build_ext --inplace
cimport cython
from fastnet._internal._pool_c cimport RealConnectionPool
from fastnet._internal.http1._parser_c cimport ResponseParser as CParser


cdef str _check_name(object name)
cdef str _check_value(str name, object value)
@cython.locals(h=Headers)
cdef Headers _headers_from_list(list items)
cdef Headers _as_headers(object headers)
cdef bytes _timeval(double seconds)
cdef str _check_method(object method)
@cython.locals(new=Request)
cdef Request _make_request(str method, object url, Headers headers, RequestBody body, object proxy, object tag)
@cython.locals(exchange=Exchange)
cdef Exchange _new_exchange(RealCall call, RealConnection connection)


@cython.final
cdef class Headers:
    cdef public list _items
    cdef public object _index
    cdef public object _wire
    cdef public object _heads

    @cython.locals(index=dict)
    cpdef dict _lookup(self)
    cpdef object get(self, str name, object default=*)
    cpdef list get_all(self, str name)
    cpdef bytes to_wire(self)


cdef class RequestBody:
    cdef public object _data
    cdef public int _kind
    cdef public long long length
    cdef public object content_type
    cdef public bint one_shot
    cdef public long long _start
    cdef public bint _used


cdef class Request:
    cdef readonly str method
    cdef readonly object url
    cdef readonly Headers headers
    cdef readonly RequestBody body
    cdef readonly object proxy
    cdef readonly object tag

    cpdef Request with_headers(self, Headers headers)


cdef class Response:
    cdef public int status_code
    cdef public str reason
    cdef public Headers headers
    cdef public Request request
    cdef public str protocol
    cdef public object prior_response
    cdef public bytes _content
    cdef public Exchange _exchange
    cdef public bint _unreadable
    cdef public bint _closed
    cdef public object network_response
    cdef public object route
    cdef object __weakref__

    @cython.locals(exchange=Exchange)
    cpdef bytes read(self)
    @cython.locals(exchange=Exchange)
    cpdef close(self)
    cpdef Response _stripped(self)


cdef class RealConnection:
    cdef public object sock
    cdef public object sendall
    cdef public object recv_into
    cdef public object route
    cdef public object address
    cdef public CParser parser
    cdef public bytearray buf
    cdef public double idle_at
    cdef public double created_at
    cdef public bint no_new_exchanges
    cdef public long long exchange_count
    cdef public double read_timeout
    cdef public double write_timeout
    cdef public bint is_tls
    cdef public object pool
    cdef public bint closed
    cdef public bint http_proxy
    cdef public object tls_version
    cdef public object proxy_authorization
    cdef object __weakref__

    cpdef set_timeouts(self, double read_timeout, double write_timeout)
    cpdef bint is_healthy(self)
    cpdef close(self)
    cpdef shutdown(self)


cdef class Exchange:
    cdef public RealCall call
    cdef public RealConnection connection
    cdef public Request request
    cdef public int body_mode
    cdef public bint keep_alive
    cdef public bint done
    cdef public object decompressor
    cdef public long long body_bytes
    cdef public bint failed
    cdef public bint head_request
    cdef public str content_encoding

    @cython.locals(conn=RealConnection, data=bytes)
    cpdef object write_request(self, bytes head, RequestBody body, bint expect_continue)
    cpdef write_body(self, RequestBody body)
    @cython.locals(conn=RealConnection, n=Py_ssize_t)
    cpdef Py_ssize_t fill(self, bint in_head) except -1
    @cython.locals(received=bint, n=Py_ssize_t, parser=CParser)
    cpdef object read_head(self, bint head_request, bint expect_continue=*)
    @cython.locals(call=RealCall, n=Py_ssize_t, parser=CParser)
    cpdef object read_chunk(self)
    @cython.locals(conn=RealConnection, call=RealCall, remaining=Py_ssize_t, total=Py_ssize_t,
                   received=Py_ssize_t, content=bytes, parser=CParser)
    cpdef bytes read_all(self)
    cpdef bytes read_rest(self)
    @cython.locals(conn=RealConnection, reusable=bint)
    cpdef finish(self, bint complete)
    @cython.locals(conn=RealConnection, parser=CParser)
    cpdef close_body(self)
    @cython.locals(call=RealCall)
    cpdef object map_error(self, object exc, str phase)


cdef class FunctionInterceptor:
    cdef public object function

    cpdef Response intercept(self, RealInterceptorChain chain)


cdef class RealInterceptorChain:
    cdef public RealCall call
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
    @cython.locals(index=Py_ssize_t, exchange=Exchange, nxt=RealInterceptorChain, response=Response,
                   bridge=BridgeInterceptor, connect=ConnectInterceptor, call_server=CallServerInterceptor,
                   retry=RetryAndFollowUpInterceptor)
    cpdef Response proceed(self, Request request)


cdef double _timeout_value(str name, object seconds) except -1.0


cdef class RetryAndFollowUpInterceptor:
    cdef public ClientCore client

    @cython.locals(call=RealCall, client=ClientCore, follow_ups=int, response=Response, follow_up=Request,
                   prior=Response)
    cpdef Response intercept(self, RealInterceptorChain chain)
    cpdef bint recover(self, object exc, RealCall call, Request request, RealInterceptorChain chain)


cdef class BridgeInterceptor:
    cdef public ClientCore client
    cdef public dict defaults

    cpdef Headers default_headers(self, object url)
    @cython.locals(request=Request, user=Headers, body=RequestBody, client=ClientCore,
                   network_headers=Headers, network_request=Request, response=Response, exchange=Exchange,
                   gzip_added=bint)
    cpdef Response intercept(self, RealInterceptorChain chain)
    @cython.locals(user=Headers, body=RequestBody)
    cpdef tuple build_headers(self, Request request, object cookies)


cdef class ConnectInterceptor:
    cdef public ClientCore client

    @cython.locals(call=RealCall, request=Request, connection=RealConnection, exchange=Exchange)
    cpdef Response intercept(self, RealInterceptorChain chain)


cdef class CallServerInterceptor:
    @cython.locals(headers=Headers, heads=dict, head=bytes)
    cpdef bytes request_head(self, Request request, RealConnection conn)
    @cython.locals(exchange=Exchange, call=RealCall, request=Request, conn=RealConnection, response=Response,
                   head_request=bint, expect_continue=bint, body=RequestBody, status=int, body_mode=int,
                   length=cython.longlong, keep_alive=bint)
    cpdef Response intercept(self, RealInterceptorChain chain)


cdef class RealCall:
    cdef public ClientCore client
    cdef public Request request
    cdef public object events
    cdef public bint executed
    cdef public bint canceled
    cdef public bint timed_out
    cdef public RealConnection connection
    cdef public Exchange exchange
    cdef public object finder
    cdef public object last_failure
    cdef public double deadline
    cdef public bint finished
    cdef public bint returned
    cdef public object wakeup
    cdef object __weakref__

    @cython.locals(client=ClientCore, chain=RealInterceptorChain, response=Response)
    cpdef Response execute(self)
    cpdef object canceled_error(self, Request request)
    @cython.locals(conn=RealConnection)
    cpdef exchange_failed(self, object exc, Exchange exchange)
    cpdef body_failed(self, object exc)
    cpdef release_connection(self, RealConnection conn, bint reusable)
    cpdef end(self)
    @cython.locals(conn=RealConnection)
    cpdef fail(self, object exc)


cdef _init_call(RealCall call, ClientCore client, Request request)
@cython.locals(call=RealCall)
cdef RealCall _new_call(ClientCore client, Request request)


cdef class ClientCore:
    cdef public double connect_timeout
    cdef public double read_timeout
    cdef public double write_timeout
    cdef public double call_timeout
    cdef public bint follow_redirects
    cdef public bint follow_ssl_redirects
    cdef public bint retry_on_connection_failure
    cdef public int max_follow_ups
    cdef public list interceptors
    cdef public RealConnectionPool pool
    cdef public object cookie_jar
    cdef public object event_listener
    cdef public object event_listener_factory
    cdef public str user_agent
    cdef public object connector
    cdef public dict addresses
    cdef public object authenticator
    cdef public object proxy_authenticator
    cdef public frozenset sensitive_headers
    cdef public object _watchdog
    cdef object __weakref__

    cpdef object new_events(self, RealCall call)
    @cython.locals(request=Request, call=RealCall, response=Response)
    cpdef Response request(self, str method, object url, object headers, object body, object json, bint stream,
                           object proxy)
    cpdef Response get(self, object url, object headers=*, object proxy=*)
    @cython.locals(conn=RealConnection, pool=RealConnectionPool, now=double)
    cpdef RealConnection acquire_connection(self, RealCall call, Request request, RealInterceptorChain chain)
    cpdef route_failed(self, RealCall call, RealConnection conn, object exc)
