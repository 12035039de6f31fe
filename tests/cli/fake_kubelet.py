"""A fake kubelet for `joules serve --kubernetes`: the pod-resources API's List method
(v1.PodResourcesLister/List, kubernetes/kubelet pkg/apis/podresources/v1/api.proto) served by
grpcio on a Unix socket, with a reply encoded here by hand from the proto's field numbers
(docs/kubernetes.md).  grpcio comes from build/test-venv (pinned in scripts/install-deps)."""
import pathlib
import socket
import sys
import threading

TEST_VENV = pathlib.Path(__file__).resolve().parents[2] / "build" / "test-venv"


def _grpc():
    site = TEST_VENV / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    if site.is_dir() and str(site) not in sys.path:
        sys.path.insert(0, str(site))
    try:
        import grpc
    except ImportError as e:
        raise AssertionError(f"grpcio is not importable ({e}) from {site}: run "
                             "scripts/install-deps test") from e
    return grpc


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    """A length-delimited field (wire type 2): a string or a message."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def list_response(pods):
    """ListPodResourcesResponse bytes.  `pods`: [(name, namespace, [(container, [(resource,
    [device ids])])])].  Each message also carries a field joules does not read (cpu_ids, a
    varint), which it must skip."""
    out = b""
    for name, namespace, containers in pods:
        pod = field(1, name) + field(2, namespace)
        for cname, devices in containers:
            c = field(1, cname) + varint(3 << 3 | 0) + varint(7)  # cpu_ids = 7
            for resource, ids in devices:
                d = field(1, resource) + b"".join(field(2, i) for i in ids)
                c += field(2, d)
            pod += field(3, c)
        out += field(1, pod)
    return out


class FakeKubelet:
    """Serves List on `path`; `reply` (bytes) is what the next call returns."""

    def __init__(self, path, reply=b""):
        self.path = str(path)
        self.reply = reply
        self.calls = 0
        self.server = None

    def start(self):
        grpc = _grpc()
        from concurrent import futures

        def list_pods(request, context):
            self.calls += 1
            return self.reply

        handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": grpc.unary_unary_rpc_method_handler(list_pods)})
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port("unix:" + self.path)
        self.server.start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.stop(None).wait()
            self.server = None
        pathlib.Path(self.path).unlink(missing_ok=True)


class RawSocket:
    """A Unix socket that answers every connection with `data` (None: says nothing and keeps the
    connection open until stop)."""

    def __init__(self, path, data):
        self.path = str(path)
        self.data = data
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.conns = []
        self.stopped = False
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            if self.data is not None:
                try:
                    c.sendall(self.data)
                    c.close()
                except OSError:
                    pass

    def stop(self):
        self.stopped = True
        self.sock.close()
        for c in self.conns:
            c.close()
        pathlib.Path(self.path).unlink(missing_ok=True)
