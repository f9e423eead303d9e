# C declarations for codec.py, which Cython compiles in place (pure-Python mode).
cimport cython
from fastnet.headers cimport Headers, headers_from_list
from fastnet.request cimport Request
from fastnet.response cimport Response, make_response


@cython.locals(headers=Headers, heads=dict, head=bytes)
cpdef bytes request_head(Request request, bint http_proxy, object proxy_authorization)
cpdef bint expects_continue(Request request)


@cython.locals(headers=Headers, lookup=dict, declared=cython.longlong)
cpdef long long request_framing(Request request) except? -3
cpdef bytes frame_chunk(bytes chunk)


@cython.locals(status=int, body_mode=int, length=cython.longlong, keep_alive=bint, response=Response)
cpdef tuple open_response(tuple head, Request request, object route)
cpdef object map_io_error(object exc, str phase, object url, bint canceled, bint timed_out)
