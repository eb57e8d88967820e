#!/usr/bin/env python3
"""loom-serve over HTTP, driven by Triton's own client (tritonclient.http) over loopback.

Builds the test repository (make_repository.py: YOLOv8n, MiniLM-L3, a batched y = 2x + 1 model and
a broken model), starts loom-serve on it (port 0, --device cpu, or --device as given) and checks:
  - health: live; not ready while `broken` is in the repository (Triton's meaning), each model's
    readiness, the repository index with the broken model's error; metadata of server and models;
  - infer YOLOv8n and MiniLM with JSON tensors and with binary tensors, every output against
    onnxruntime's on the same inputs (tests/published/check_model.py's compare() and tolerance:
    1e-4 relative, floored at 1% of the output's largest), the batched model against its
    hand-computed answer;
  - concurrent clients (threads, each its own connection): each client's first answer against
    onnxruntime's, its later answers bit-identical to the first;
  - bad requests each answered with the protocol's status and {"error": ...} body, the server
    serving afterwards: unknown model 404, wrong shape 400, wrong dtype 400, malformed JSON 400
    (raw http.client), unsupported Content-Encoding 400, BYTES 400; a gzip request body accepted;
  - a second loom-serve with a small --max-request-bytes: a larger body 413, a small one served;
  - a load test from a second process (this script with --load-client): 200 requests from 4
    threads, capped at 60 s, every request answered and right;
  - loom-serve's own errors: a port in use, an unreadable repository, a bad flag: exit 1 with
    the reason on stderr; SIGTERM: exit 0.
Every wait is bounded; loom-serve is always killed at the end. Exit 0 all pass, 1 a failure,
77 skipped (the venv or a package missing). With --venv DIR it re-runs itself with DIR's python.
"""
import argparse
import gzip
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "published"))
sys.path.insert(0, HERE)
from venv_support import SKIP, enter_venv  # noqa: E402
import check_model  # noqa: E402  (tests/published: compare(), the published models' measure)
import make_repository  # noqa: E402
from serve_support import Server, ServeError, run_loom_serve  # noqa: E402

np = ort = httpclient = InferenceServerException = None
# Each published model's tolerance is check_model.py's (tests/published), read from its table.
TOLERANCE = {"yolov8n": "yolov8n_nudenet", "minilm": "minilm_l3"}
TOTAL_SECONDS = 540  # the whole script, below ctest's TIMEOUT
CALL_SECONDS = 120  # one client call (network_timeout / connection_timeout)


def import_clients():
    global np, ort, httpclient, InferenceServerException
    try:
        import numpy
        import onnxruntime
        import tritonclient.http as client_module
        from tritonclient.utils import InferenceServerException as error_type
    except ImportError as error:
        print(f"check_serve_http: {error} (scripts/setup-test-venv installs tritonclient[http], numpy, "
              f"onnxruntime); skipping")
        sys.exit(SKIP)
    np, ort, httpclient, InferenceServerException = numpy, onnxruntime, client_module, error_type
    check_model.import_reference_tools()


class Checks:
    """Collects each check's outcome; a failed check is printed and the run carries on."""

    def __init__(self):
        self.failures = []

    def check(self, name, passed, detail=""):
        print(f"  {name}: {'ok' if passed else 'FAIL'}{(' (' + detail + ')') if detail else ''}", flush=True)
        if not passed:
            self.failures.append(name)
        return passed


def tolerance(model):
    return check_model.MODELS[TOLERANCE[model]][4]


def client_for(url, concurrency=1):
    return httpclient.InferenceServerClient(url, concurrency=concurrency, connection_timeout=CALL_SECONDS,
                                            network_timeout=CALL_SECONDS)


# --- the models' inputs and references --------------------------------------------------------

def yolo_inputs(rng):
    return {"images": rng.random((1, 3, 320, 320), dtype=np.float32)}


def minilm_inputs(rng, vocab):
    input_ids = rng.integers(0, vocab, size=(2, 16), dtype=np.int64)
    attention_mask = np.ones((2, 16), dtype=np.int64)
    attention_mask[1, -3:] = 0  # the second sequence padded at its end
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def minilm_vocab(path):
    import onnx
    model = onnx.load(path)
    initializers = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == "input_ids":
            return initializers[node.input[0]].dims[0]
    sys.exit("check_serve_http: found no Gather of input_ids to size MiniLM's vocabulary from")


class Reference:
    """onnxruntime sessions of the published models, run on the same inputs as loom-serve."""

    def __init__(self):
        self.sessions = {name: ort.InferenceSession(make_repository.published_path(name),
                                                    providers=["CPUExecutionProvider"])
                         for name in make_repository.PUBLISHED}

    def outputs(self, model, inputs):
        session = self.sessions[model]
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, inputs)))


def triton_inputs(inputs, binary):
    made = []
    for name, value in inputs.items():
        tensor = httpclient.InferInput(name, list(value.shape), "FP32" if value.dtype == np.float32 else "INT64")
        tensor.set_data_from_numpy(value, binary_data=binary)
        made.append(tensor)
    return made


def infer_and_compare(checks, client, model, inputs, reference, label, binary, outputs=None):
    """One infer through tritonclient, each output compared with onnxruntime's by check_model.py's
    compare() (printed per output); True when all pass."""
    requested = None
    if outputs == "listed":
        requested = [httpclient.InferRequestedOutput(name, binary_data=binary) for name in reference]
    result = client.infer(model, triton_inputs(inputs, binary), outputs=requested, request_id=label)
    print(f"  {label}:")
    ok = checks.check("id echoed", result.get_response().get("id") == label)
    for name, ref in reference.items():
        got = result.as_numpy(name)
        if got is None:
            ok = checks.check(f"{label}: output {name} answered", False)
            continue
        ok = check_model.compare(name, got, ref, tolerance(model)) and ok
    return checks.check(label, ok)


# --- the checks --------------------------------------------------------------------------------

def check_health_and_metadata(checks, client, reference):
    checks.check("server live", client.is_server_live())
    checks.check("server not ready while 'broken' is in the repository", not client.is_server_ready())
    for model in ("yolov8n", "minilm", make_repository.BATCHED):
        checks.check(f"model {model} ready", client.is_model_ready(model))
        checks.check(f"model {model} version 1 ready", client.is_model_ready(model, "1"))
    checks.check("model broken not ready", not client.is_model_ready(make_repository.BROKEN))
    checks.check("unknown model not ready", not client.is_model_ready("no_such_model"))

    server = client.get_server_metadata()
    checks.check("server metadata", server.get("name") == "loom" and server.get("version") and
                 "binary_tensor_data" in server.get("extensions", []), json.dumps(server))

    index = {entry["name"]: entry for entry in client.get_model_repository_index()}
    broken = index.get(make_repository.BROKEN, {})
    checks.check("repository index lists every model", sorted(index) == sorted(
        ["yolov8n", "minilm", make_repository.BATCHED, make_repository.BROKEN]), str(sorted(index)))
    checks.check("repository index: broken UNAVAILABLE with its error",
                 broken.get("state") == "UNAVAILABLE" and "ONNX" in broken.get("reason", ""), json.dumps(broken))
    try:
        client.get_model_metadata(make_repository.BROKEN)
        checks.check("broken model's metadata refused", False, "answered")
    except InferenceServerException as error:
        checks.check("broken model's metadata: 503 with its error",
                     error.status() == "503" and "not ready" in error.message(), f"{error.status()} {error.message()}")

    for model, session in reference.sessions.items():
        metadata = client.get_model_metadata(model)
        expected_inputs = [(i.name, i.type) for i in session.get_inputs()]
        got_inputs = [(i["name"], i["datatype"]) for i in metadata["inputs"]]
        got_outputs = [o["name"] for o in metadata["outputs"]]
        types = {"tensor(float)": "FP32", "tensor(int64)": "INT64"}
        same = (metadata["name"] == model and metadata["platform"] == "onnx" and metadata["versions"] == ["1"] and
                got_inputs == [(n, types[t]) for n, t in expected_inputs] and
                got_outputs == [o.name for o in session.get_outputs()])
        checks.check(f"model {model} metadata", same, json.dumps(metadata)[:300])
    config = client.get_model_config(make_repository.BATCHED)
    checks.check("scale_batched config (Triton's form): max_batch_size and dims without the batch",
                 config.get("max_batch_size") == make_repository.BATCHED_MAX and
                 config.get("input") == [{"name": "x", "data_type": "TYPE_FP32", "dims": [make_repository.BATCHED_WIDTH]}],
                 json.dumps(config))
    yolo = client.get_model_metadata("yolov8n")
    checks.check("yolov8n input shape bound by config", yolo["inputs"][0]["shape"] == [1, 3, 320, 320],
                 str(yolo["inputs"][0]["shape"]))


def check_inference(checks, client, reference, rng, vocab):
    yolo = yolo_inputs(rng)
    yolo_ref = reference.outputs("yolov8n", yolo)
    infer_and_compare(checks, client, "yolov8n", yolo, yolo_ref, "yolov8n JSON tensors", binary=False,
                      outputs="listed")
    infer_and_compare(checks, client, "yolov8n", yolo, yolo_ref, "yolov8n binary tensors", binary=True,
                      outputs="listed")
    minilm = minilm_inputs(rng, vocab)
    minilm_ref = reference.outputs("minilm", minilm)
    infer_and_compare(checks, client, "minilm", minilm, minilm_ref, "minilm JSON tensors", binary=False,
                      outputs="listed")
    # No outputs listed: tritonclient asks every output in binary (binary_data_output).
    infer_and_compare(checks, client, "minilm", minilm, minilm_ref, "minilm binary tensors, every output",
                      binary=True)

    x = rng.standard_normal((3, make_repository.BATCHED_WIDTH)).astype(np.float32)
    result = client.infer(make_repository.BATCHED, triton_inputs({"x": x}, binary=False),
                          outputs=[httpclient.InferRequestedOutput("y", binary_data=False)])
    y = result.as_numpy("y")
    checks.check("scale_batched: y = 2x + 1 for 3 rows", y is not None and np.array_equal(y, 2 * x + 1))


def check_concurrent(checks, url, reference, rng, vocab, threads=8, per_thread=3):
    """`threads` clients at once, each its own connection and inputs, `per_thread` requests each:
    the first answer of each compared with onnxruntime's, every other answer bit-identical to it
    (the same executor runs the same plan on the same inputs)."""
    cases = []
    for i in range(threads):
        model = "yolov8n" if i % 2 == 0 else "minilm"
        inputs = yolo_inputs(rng) if model == "yolov8n" else minilm_inputs(rng, vocab)
        cases.append((model, inputs, reference.outputs(model, inputs)))
    answers = [None] * threads

    def worker(i):
        model, inputs, ref = cases[i]
        try:
            with client_for(url) as client:
                answers[i] = [{name: client.infer(model, triton_inputs(inputs, binary=True)).as_numpy(name)
                               for name in ref} for _ in range(per_thread)]
        except Exception as error:  # noqa: BLE001 - reported as this thread's failure
            answers[i] = error

    pool = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for thread in pool:
        thread.start()
    deadline = time.monotonic() + 300
    for thread in pool:
        thread.join(max(0.0, deadline - time.monotonic()))
    print(f"  {threads} concurrent clients x {per_thread} requests:")
    ok = True
    for i, (model, _, ref) in enumerate(cases):
        if not isinstance(answers[i], list):
            ok = checks.check(f"client {i} ({model}) answered", False, repr(answers[i])[:300])
            continue
        first = answers[i][0]
        ok = all(check_model.compare(f"client {i} {model} {name}", first[name], r, tolerance(model))
                 for name, r in ref.items()) and ok
        same = all(np.array_equal(later[name], first[name]) for later in answers[i][1:] for name in ref)
        ok = checks.check(f"client {i}: {per_thread - 1} more answers bit-identical to its first", same) and ok
    checks.check(f"{threads} concurrent clients x {per_thread} requests", ok)


def raw_post(url, path, body, headers=None):
    """POST through http.client: (status, parsed JSON body or the raw text)."""
    host, port = url.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=CALL_SECONDS)
    try:
        connection.request("POST", path, body=body, headers=headers or {"Content-Type": "application/json"})
        response = connection.getresponse()
        text = response.read()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text
    finally:
        connection.close()


def expect_error(checks, name, status, body, expected_status, expected_words):
    message = body.get("error", "") if isinstance(body, dict) else ""
    ok = status == expected_status and isinstance(body, dict) and all(w in message for w in expected_words)
    checks.check(name, ok, f"{status} {body if isinstance(body, dict) else body[:200]!r}")


def check_bad_requests(checks, client, url, rng, vocab):
    try:
        client.infer("no_such_model", triton_inputs({"x": np.zeros((1, 4), np.float32)}, binary=False))
        checks.check("unknown model refused", False, "answered")
    except InferenceServerException as error:
        checks.check("unknown model: 404", error.status() == "404" and "no_such_model" in error.message(),
                     f"{error.status()} {error.message()}")
    wrong_shape = {"x": np.zeros((2, make_repository.BATCHED_WIDTH + 1), np.float32)}
    try:
        client.infer(make_repository.BATCHED, triton_inputs(wrong_shape, binary=True))
        checks.check("wrong shape refused", False, "answered")
    except InferenceServerException as error:
        checks.check("wrong shape: 400 naming the input", error.status() == "400" and "'x'" in error.message(),
                     f"{error.status()} {error.message()}")
    wrong_dtype = minilm_inputs(rng, vocab)
    wrong_dtype["input_ids"] = wrong_dtype["input_ids"].astype(np.float32)
    try:
        client.infer("minilm", triton_inputs(wrong_dtype, binary=False))
        checks.check("wrong dtype refused", False, "answered")
    except InferenceServerException as error:
        checks.check("wrong dtype: 400 naming the input",
                     error.status() == "400" and "input_ids" in error.message(), f"{error.status()} {error.message()}")

    path = f"/v2/models/{make_repository.BATCHED}/infer"
    status, body = raw_post(url, path, b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2')
    expect_error(checks, "malformed JSON: 400 naming the byte", status, body, 400, ["malformed JSON", "byte offset"])
    status, body = raw_post(url, path, json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                                                               "data": [1, 2, 3]}]}).encode())
    expect_error(checks, "data count differs from the shape: 400", status, body, 400, ["3 values", "1x4"])
    status, body = raw_post(url, path, json.dumps({"inputs": [{"name": "x", "shape": [1], "datatype": "BYTES",
                                                               "data": ["a"]}]}).encode())
    expect_error(checks, "BYTES: 400 unsupported", status, body, 400, ["BYTES", "unsupported"])
    status, body = raw_post(url, path, b"{}", {"Content-Type": "application/json", "Content-Encoding": "compress"})
    expect_error(checks, "unsupported Content-Encoding: 400", status, body, 400, ["Content-Encoding", "compress"])
    status, body = raw_post(url, "/v2/models/nothing/here", b"{}")
    expect_error(checks, "no such route: 404", status, body, 404, ["no route"])

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    compressed = gzip.compress(json.dumps({"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32",
                                                       "data": x.tolist()}]}).encode())
    status, body = raw_post(url, path, compressed, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
    got = np.array(body["outputs"][0]["data"], np.float32).reshape(2, 4) if status == 200 else None
    checks.check("gzip request body decoded", got is not None and np.array_equal(got, 2 * x + 1), f"{status}")

    # tritonclient's own compression: a deflate request body, a gzip answer asked for.
    x = rng.standard_normal((2, make_repository.BATCHED_WIDTH)).astype(np.float32)
    result = client.infer(make_repository.BATCHED, triton_inputs({"x": x}, binary=False),
                          outputs=[httpclient.InferRequestedOutput("y", binary_data=False)],
                          request_compression_algorithm="deflate", response_compression_algorithm="gzip")
    checks.check("deflate request, gzip answer (tritonclient)", np.array_equal(result.as_numpy("y"), 2 * x + 1))

    x = rng.standard_normal((1, make_repository.BATCHED_WIDTH)).astype(np.float32)
    result = client.infer(make_repository.BATCHED, triton_inputs({"x": x}, binary=True))
    checks.check("still serving after the bad requests", np.array_equal(result.as_numpy("y"), 2 * x + 1))


def check_size_limit(checks, args, repo):
    limit = 4096
    with Server(args.loom_serve, repo, device=args.device, extra=["--max-request-bytes", str(limit)]) as server:
        url = server.url()
        big = {"inputs": [{"name": "x", "shape": [256, 4], "datatype": "FP32", "data": [0.5] * 1024}]}
        body = json.dumps(big).encode()
        status, answer = raw_post(url, f"/v2/models/{make_repository.BATCHED}/infer", body)
        expect_error(checks, f"{len(body)}-byte body over --max-request-bytes {limit}: 413", status, answer, 413,
                     [str(limit)])
        x = np.ones((2, make_repository.BATCHED_WIDTH), np.float32)
        with client_for(url) as client:
            result = client.infer(make_repository.BATCHED, triton_inputs({"x": x}, binary=True))
            checks.check("a small body served after it", np.array_equal(result.as_numpy("y"), 2 * x + 1))


def load_client(url, requests, threads, seconds):
    """The load test's second process: `requests` infers of the batched model from `threads`
    threads (each its own connection), each answer checked against 2x + 1; prints one JSON line
    {"sent", "right", "wrong", "errors"} and exits 0."""
    import_clients()
    rng = np.random.default_rng(7)
    counts = {"sent": 0, "right": 0, "wrong": 0, "errors": []}
    lock = threading.Lock()
    next_request = [0]
    deadline = time.monotonic() + seconds

    def worker():
        with client_for(url) as client:
            while time.monotonic() < deadline:
                with lock:
                    if next_request[0] >= requests:
                        return
                    next_request[0] += 1
                    rows = 1 + next_request[0] % 3
                    x = rng.standard_normal((rows, make_repository.BATCHED_WIDTH)).astype(np.float32)
                    counts["sent"] += 1
                try:
                    y = client.infer(make_repository.BATCHED, triton_inputs({"x": x}, binary=True)).as_numpy("y")
                    right = y is not None and np.array_equal(y, 2 * x + 1)
                    with lock:
                        counts["right" if right else "wrong"] += 1
                except Exception as error:  # noqa: BLE001 - counted, reported by the parent
                    with lock:
                        counts["errors"].append(repr(error)[:200])

    start = time.monotonic()
    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(max(0.0, deadline - time.monotonic()) + 5)
    counts["seconds"] = round(time.monotonic() - start, 3)
    print(json.dumps(counts), flush=True)
    return 0


def check_load_from_second_process(checks, url, requests=200, threads=4, seconds=60):
    command = [sys.executable, os.path.abspath(__file__), "--load-client", url, "--requests", str(requests),
               "--threads", str(threads), "--seconds", str(seconds)]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        checks.check("load test from a second process", False, f"no end within {seconds + 60} s")
        return
    try:
        counts = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        checks.check("load test from a second process", False, f"exit {run.returncode}: {run.stdout}{run.stderr}")
        return
    checks.check(f"load test: {requests} requests from {threads} threads in a second process, none lost",
                 counts["sent"] == requests and counts["right"] == requests and not counts["errors"],
                 f"sent {counts['sent']}, right {counts['right']}, wrong {counts['wrong']}, "
                 f"errors {len(counts['errors'])} {counts['errors'][:3]}; {counts.get('seconds')} s, "
                 f"a figure only, not checked")


def check_metrics(checks, url):
    """The executor's Prometheus endpoint on the port loom-serve printed: every served model's
    completed requests counted (the checks above ran each at least once)."""
    host, port = url.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=CALL_SECONDS)
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        text = response.read().decode()
    finally:
        connection.close()
    counted = {}
    for line in text.splitlines():
        if line.startswith("loom_requests_total{") and 'status="completed"' in line:
            model = line.split('model="', 1)[1].split('"', 1)[0]
            counted[model] = float(line.rsplit(" ", 1)[1])
    served = ["yolov8n", "minilm", make_repository.BATCHED]
    checks.check(f"metrics at {url}: completed requests of every served model",
                 response.status == 200 and all(counted.get(m, 0) >= 1 for m in served), str(counted))


def check_cli_errors(checks, args, repo, work):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        run = run_loom_serve([args.loom_serve, "--model-repository", repo, "--device", "cpu", "--http-port",
                              str(port), "--metrics-port", "-1"] + grpc_off(args))
        checks.check("HTTP port in use: exit 1 naming the port", run.returncode == 1 and str(port) in run.stderr and
                     "in use" in run.stderr, f"exit {run.returncode}: {run.stderr.strip()[-300:]}")
    finally:
        taken.close()
    missing = os.path.join(work, "no_such_repository")
    run = run_loom_serve([args.loom_serve, "--model-repository", missing, "--device", "cpu", "--http-port", "0",
                          "--metrics-port", "-1"] + grpc_off(args))
    checks.check("unreadable repository: exit 1 naming it", run.returncode == 1 and missing in run.stderr,
                 f"exit {run.returncode}: {run.stderr.strip()[-300:]}")
    run = run_loom_serve([args.loom_serve, "--model-repository", repo, "--http-port", "70000"])
    checks.check("bad flag: exit 1 naming it", run.returncode == 1 and "--http-port" in run.stderr,
                 f"exit {run.returncode}: {run.stderr.strip()[-300:]}")
    run = run_loom_serve([args.loom_serve, "--help"])
    checks.check("--help: exit 0", run.returncode == 0 and "--model-repository" in run.stdout)


def grpc_off(args):
    from serve_support import supports_flag
    return ["--grpc-port", "-1"] if supports_flag(args.loom_serve, "--grpc-port") else []


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", help="the test venv (scripts/setup-test-venv)")
    parser.add_argument("--loom-serve", help="the loom-serve binary")
    parser.add_argument("--work-dir", help="where the repository is written")
    parser.add_argument("--device", default="cpu", help="loom-serve's --device (cpu, cuda, cuda:N, auto)")
    parser.add_argument("--load-client", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=4, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=60, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load_client:
        sys.exit(load_client(args.load_client, args.requests, args.threads, args.seconds))
    if not (args.venv and args.loom_serve and args.work_dir):
        parser.error("--venv, --loom-serve and --work-dir are required")
    enter_venv(args.venv, "check_serve_http")
    import_clients()
    # The whole run is bounded whatever hangs: SIGALRM ends it (the servers are killed on the way out).
    signal.signal(signal.SIGALRM, lambda *_: sys.exit(f"check_serve_http: FAIL: over {TOTAL_SECONDS} s"))
    signal.alarm(TOTAL_SECONDS)

    shutil.rmtree(args.work_dir, ignore_errors=True)
    repo = make_repository.build(os.path.join(args.work_dir, "repository"))
    reference = Reference()
    vocab = minilm_vocab(make_repository.published_path("minilm"))
    rng = np.random.default_rng(1)
    checks = Checks()
    try:
        print("loom-serve on the test repository:")
        with Server(args.loom_serve, repo, metrics=0, device=args.device) as server:
            url = server.url()
            print(f"  serving at {url}")
            with client_for(url) as client:
                check_health_and_metadata(checks, client, reference)
                check_inference(checks, client, reference, rng, vocab)
                check_bad_requests(checks, client, url, rng, vocab)
            check_concurrent(checks, url, reference, rng, vocab)
            check_load_from_second_process(checks, url)
            check_metrics(checks, server.url("metrics"))
        checks.check("SIGTERM: exit 0", True)
        print("loom-serve with --max-request-bytes 4096:")
        check_size_limit(checks, args, repo)
        print("loom-serve's own errors:")
        check_cli_errors(checks, args, repo, args.work_dir)
    except ServeError as error:
        checks.check("loom-serve ran and stopped as it should", False, str(error))
    if checks.failures:
        print(f"check_serve_http: FAIL: {len(checks.failures)} check(s): {checks.failures}")
        return 1
    print("check_serve_http: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
