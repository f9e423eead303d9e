"""The connection layer: sockets to routes, TLS, tunnels, SOCKS, the pool, and finding a connection."""
