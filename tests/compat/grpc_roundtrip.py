"""gRPC (C core + Python): a server and a client in one process exchange messages of up to
1 MiB over a local socket (the transport FL frameworks use between client and server)."""
from concurrent import futures

import grpc

from compat_rounds import rounds

ECHO = "/compat.Echo/Call"


def handler(request, context):
    return request[::-1]


server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                     options=[("grpc.max_receive_message_length", 8 << 20)])
server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
    "compat.Echo", {"Call": grpc.unary_unary_rpc_method_handler(handler)})])
port = server.add_insecure_port("127.0.0.1:0")
server.start()
channel = grpc.insecure_channel(f"127.0.0.1:{port}",
                                options=[("grpc.max_receive_message_length", 8 << 20)])
call = channel.unary_unary(ECHO)


def work(i):
    sizes = [10, 1000, 100000, 1 << 20]
    got = [call(bytes(range(256)) * (n // 256 + 1), timeout=30)[:8].hex() for n in sizes]
    return (i, got)


for r in rounds(3, work):
    print(r)
channel.close()
server.stop(None).wait()
