#!/usr/bin/env python3
"""loom-serve's KServe v2 gRPC front end driven by a real client, tritonclient.grpc, over loopback.

1. proto/grpc_predict_v2.proto, compiled by protoc, declares every message and call with the same
   field numbers, types and labels as tritonclient's own generated module (the protocol the client
   puts on the wire).
2. A repository with YOLOv8n (nudenet's 320n.onnx), MiniLM-L3 and a broken model is served by
   loom-serve (gRPC on a free port): server live, not ready (a model is broken), the good models
   ready, the broken one not ready with its error on ModelMetadata and ModelInfer (UNAVAILABLE);
   server and model metadata; YOLOv8n and MiniLM outputs compared with onnxruntime's on the same
   seeded inputs (check_model.py's criterion and tolerance); concurrent clients, each output checked;
   bad requests (unknown model, wrong shape, wrong datatype, a message over --max-request-bytes), each
   answered with its gRPC status while the server keeps serving; a load test from a second process
   (bounded in requests and time) in which every request is answered and correct.
3. SIGTERM: loom-serve exits 0.

Exit status: 0 pass, 1 fail, 77 skipped (no venv, or tritonclient/onnxruntime missing in it).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "published"))
sys.path.insert(0, HERE)
from venv_support import SKIP, enter_venv  # noqa: E402

TOOL = "check_serve_grpc"
TOLERANCE = 1e-4  # check_model.py's for both float models
CALL_TIMEOUT_S = 60  # every client call: a server that hangs fails the test instead of stalling it


def fail(message):
    print(f"{TOOL}: FAIL: {message}", flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
    print(f"  ok: {message}", flush=True)


# --- 1. the protocol file against tritonclient's --------------------------------------------------

def compare_proto(protoc, proto):
    """Compiles our .proto with protoc into a descriptor set and compares every message, field and
    call it declares with tritonclient.grpc's module (the client's side of the wire)."""
    from google.protobuf import descriptor_pb2
    from tritonclient.grpc import model_config_pb2, service_pb2
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        run = subprocess.run([protoc, f"--proto_path={os.path.dirname(proto)}", f"--descriptor_set_out={out}",
                              os.path.basename(proto)], capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            fail(f"protoc could not compile {proto}:\n{run.stderr}")
        files = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            files.ParseFromString(f.read())
    ours = files.file[0]
    theirs = service_pb2.DESCRIPTOR
    check(ours.package == theirs.package == "inference", f"package '{ours.package}' is the protocol's")
    fields = 0

    def compare_message(message, reference, path):
        nonlocal fields
        for field in message.field:
            ref = reference.fields_by_name.get(field.name)
            if ref is None:
                fail(f"{path}.{field.name}: tritonclient has no such field")
            # FieldDescriptorProto's type and label numbers are FieldDescriptor's TYPE_*/LABEL_*.
            repeated = field.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
            ref_repeated = ref.is_repeated if hasattr(ref, "is_repeated") else ref.label == ref.LABEL_REPEATED
            if field.number != ref.number or field.type != ref.type or repeated != ref_repeated:
                fail(f"{path}.{field.name}: ours is number {field.number} type {field.type} repeated {repeated}, "
                     f"tritonclient's number {ref.number} type {ref.type} repeated {ref_repeated}")
            ref_type = ref.message_type or ref.enum_type
            if field.type_name and (ref_type is None or field.type_name.lstrip(".") != ref_type.full_name):
                fail(f"{path}.{field.name}: type {field.type_name}, tritonclient's "
                     f"{ref_type.full_name if ref_type else 'a scalar'}")
            ours_oneof = message.oneof_decl[field.oneof_index].name if field.HasField("oneof_index") else None
            ref_oneof = ref.containing_oneof.name if ref.containing_oneof else None
            if ours_oneof != ref_oneof:
                fail(f"{path}.{field.name}: oneof {ours_oneof}, tritonclient's {ref_oneof}")
            fields += 1
        for nested in message.nested_type:
            ref = reference.nested_types_by_name.get(nested.name)
            if ref is None:
                fail(f"{path}.{nested.name}: tritonclient has no such message")
            compare_message(nested, ref, f"{path}.{nested.name}")

    # The calls' messages are in tritonclient's service module, the model configuration's in its
    # model_config module: both of package inference.
    modules = (theirs, model_config_pb2.DESCRIPTOR)
    for message in ours.message_type:
        ref = next((m.message_types_by_name[message.name] for m in modules
                    if message.name in m.message_types_by_name), None)
        if ref is None:
            fail(f"message {message.name}: tritonclient has no such message")
        compare_message(message, ref, message.name)
    for enum in ours.enum_type:
        ref = next((m.enum_types_by_name[enum.name] for m in modules if enum.name in m.enum_types_by_name), None)
        values = {v.name: v.number for v in enum.value}
        if ref is None or any(ref.values_by_name.get(name) is None or ref.values_by_name[name].number != number
                              for name, number in values.items()):
            fail(f"enum {enum.name}: not tritonclient's")
    service = ours.service[0]
    ref_service = theirs.services_by_name[service.name]
    for method in service.method:
        ref = ref_service.methods_by_name.get(method.name)
        if (ref is None or method.input_type.lstrip(".") != ref.input_type.full_name
                or method.output_type.lstrip(".") != ref.output_type.full_name):
            fail(f"rpc {service.name}.{method.name}: not tritonclient's")
    check(True, f"{len(ours.message_type)} messages ({fields} fields), {len(ours.enum_type)} enum and "
                f"{len(service.method)} calls of "
                f"{service.name} match tritonclient {tritonclient_version()}'s protocol")


def tritonclient_version():
    import importlib.metadata
    return importlib.metadata.version("tritonclient")


# --- 2. loom-serve over gRPC ---------------------------------------------------------------------

def status_of(call):
    """Runs `call`, which must fail; returns (gRPC status name, message) of its InferenceServerException."""
    from tritonclient.utils import InferenceServerException
    try:
        call()
    except InferenceServerException as error:
        return str(error.status()).replace("StatusCode.", ""), error.message() or ""
    fail("the call succeeded where an error was expected")


def infer(client, model, arrays, outputs):
    """One ModelInfer with raw tensors; returns the outputs as numpy arrays by name."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import np_to_triton_dtype
    inputs = []
    for name, array in arrays.items():
        tensor = grpcclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    result = client.infer(model, inputs, outputs=[grpcclient.InferRequestedOutput(n) for n in outputs],
                          client_timeout=CALL_TIMEOUT_S)
    return {name: result.as_numpy(name) for name in outputs}


class Reference:
    """A published model, its onnxruntime session and the seeded inputs check_model.py makes."""

    def __init__(self, key):
        import numpy as np
        import onnx
        import onnxruntime as ort
        import check_model
        distribution, file_name, make_inputs, _, tolerance = check_model.MODELS[key]
        self.path = check_model.locate(distribution, file_name)
        self.model = onnx.load(self.path)
        self.make_inputs = make_inputs
        self.tolerance = tolerance
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(self.path, options, providers=["CPUExecutionProvider"])
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.np = np

    def inputs(self, seed):
        return self.make_inputs(self.model, self.np.random.default_rng(seed))

    def run(self, inputs):
        return dict(zip(self.outputs, self.session.run(self.outputs, inputs)))


def matches(reference, got, expected, quiet=False):
    import check_model
    ok = True
    for name in reference.outputs:
        if quiet:
            import io
            import contextlib
            with contextlib.redirect_stdout(io.StringIO()):
                ok = check_model.compare(name, got[name], expected[name], reference.tolerance) and ok
        else:
            ok = check_model.compare(name, got[name], expected[name], reference.tolerance) and ok
    return ok


def check_health_and_metadata(client, models):
    check(client.is_server_live(client_timeout=CALL_TIMEOUT_S), "ServerLive: live")
    check(not client.is_server_ready(client_timeout=CALL_TIMEOUT_S),
          "ServerReady: not ready (Triton's meaning: every model ready; 'broken' is not)")
    for name in models:
        check(client.is_model_ready(name, client_timeout=CALL_TIMEOUT_S), f"ModelReady {name}: ready")
    check(not client.is_model_ready("broken", client_timeout=CALL_TIMEOUT_S), "ModelReady broken: not ready")
    check(not client.is_model_ready("no_such_model", client_timeout=CALL_TIMEOUT_S), "ModelReady no_such_model: false")
    server = client.get_server_metadata(as_json=True, client_timeout=CALL_TIMEOUT_S)
    check(server.get("name") == "loom" and server.get("version"), f"ServerMetadata: {server}")


def check_model_metadata(client, name, reference, bound):
    """The model's inputs and outputs as the ONNX file declares them, symbolic dims as the repository
    config binds them (`bound`)."""
    import onnx
    from tritonclient.utils import np_to_triton_dtype
    from onnx import helper
    meta = client.get_model_metadata(name, as_json=True, client_timeout=CALL_TIMEOUT_S)

    def declared(values):
        out = []
        for value in values:
            tensor = value.type.tensor_type
            dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
            shape = [d.dim_value if d.HasField("dim_value") else bound.get(d.dim_param, -1) for d in tensor.shape.dim]
            out.append({"name": value.name, "datatype": np_to_triton_dtype(dtype), "shape": shape})
        return out

    def served(entries):
        return [{"name": e["name"], "datatype": e["datatype"], "shape": [int(d) for d in e.get("shape", [])]}
                for e in entries]

    initializers = {t.name for t in reference.model.graph.initializer}
    inputs = declared([v for v in reference.model.graph.input if v.name not in initializers])
    check(meta["name"] == name and served(meta["inputs"]) == inputs, f"ModelMetadata {name}: inputs {inputs}")
    # Output dims the model computes (YOLOv8n's box count) may be shown resolved or open: names and
    # datatypes must match, shapes where the file fixes them.
    outputs = served(meta["outputs"])
    expected = declared(reference.model.graph.output)
    same = [o["name"] for o in outputs] == [e["name"] for e in expected] and all(
        o["datatype"] == e["datatype"] and len(o["shape"]) == len(e["shape"]) and
        all(x == y or y == -1 or x == -1 for x, y in zip(o["shape"], e["shape"])) for o, e in zip(outputs, expected))
    check(same, f"ModelMetadata {name}: outputs {outputs}")


def check_model_config(client, name, max_batch_size, inputs):
    """Triton's configuration as perf_analyzer reads it: `inputs` {name: (TYPE_..., dims)}, dims
    without the batch dim when the model batches."""
    config = client.get_model_config(name, as_json=True, client_timeout=CALL_TIMEOUT_S)["config"]
    got = {i["name"]: (i.get("data_type", "TYPE_INVALID"), [int(d) for d in i.get("dims", [])])
           for i in config.get("input", [])}
    check(config.get("name") == name and int(config.get("max_batch_size", 0)) == max_batch_size and got == inputs,
          f"ModelConfig {name}: max_batch_size {config.get('max_batch_size', 0)}, inputs {got}")


def check_infer(client, name, reference, seed):
    inputs = reference.inputs(seed)
    got = infer(client, name, inputs, reference.outputs)
    print(f"  {name} (seed {seed}) against onnxruntime:", flush=True)
    check(matches(reference, got, reference.run(inputs)), f"ModelInfer {name}: every output matches onnxruntime")


def check_concurrent(url, name, reference, clients, requests):
    """`clients` threads, each with its own connection, `requests` inferences each on seeds of its
    own; every answer compared with onnxruntime's."""
    import tritonclient.grpc as grpcclient
    expected = {}
    for c in range(clients):
        for r in range(requests):
            seed = 1000 + c * requests + r
            inputs = reference.inputs(seed)
            expected[seed] = (inputs, reference.run(inputs))
    problems = []

    def work(c):
        try:
            client = grpcclient.InferenceServerClient(url)
            for r in range(requests):
                seed = 1000 + c * requests + r
                inputs, ref = expected[seed]
                got = infer(client, name, inputs, reference.outputs)
                if not matches(reference, got, ref, quiet=True):
                    problems.append(f"client {c} seed {seed}: outputs differ from onnxruntime")
            client.close()
        except Exception as error:  # noqa: BLE001: every failure is reported below
            problems.append(f"client {c}: {error}")

    threads = [threading.Thread(target=work, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=CALL_TIMEOUT_S * requests)
    if any(t.is_alive() for t in threads):
        fail(f"concurrent {name}: a client did not finish")
    check(not problems, f"{clients} concurrent clients x {requests} {name} inferences, each matching onnxruntime"
          + ("" if not problems else ": " + "; ".join(problems)))


def check_bad_requests(client, url, yolo, minilm):
    import numpy as np
    import tritonclient.grpc as grpcclient
    from tritonclient.grpc import service_pb2, service_pb2_grpc
    import grpc
    images = yolo.inputs(7)["images"]
    code, message = status_of(lambda: infer(client, "no_such_model", {"images": images}, ["output0"]))
    check(code == "NOT_FOUND" and "no_such_model" in message, f"unknown model: {code} '{message}'")
    code, message = status_of(lambda: infer(client, "yolov8n", {"images": images[:, :, :, :200]}, ["output0"]))
    check(code == "INVALID_ARGUMENT" and "images" in message, f"wrong shape: {code} '{message}'")
    code, message = status_of(lambda: infer(client, "yolov8n", {"images": images.astype(np.float64)}, ["output0"]))
    check(code == "INVALID_ARGUMENT" and "images" in message, f"wrong datatype: {code} '{message}'")
    ids = minilm.inputs(7)
    code, message = status_of(lambda: infer(client, "minilm", {"input_ids": ids["input_ids"]}, minilm.outputs))
    check(code == "INVALID_ARGUMENT" and "attention_mask" in message, f"missing input: {code} '{message}'")
    code, message = status_of(lambda: infer(client, "yolov8n", {"images": images}, ["no_such_output"]))
    check(code == "INVALID_ARGUMENT" and "no_such_output" in message, f"unknown output: {code} '{message}'")
    code, message = status_of(lambda: infer(client, "broken", {"images": images}, ["output0"]))
    check(code == "UNAVAILABLE" and "broken" in message, f"infer on the broken model: {code} '{message}'")
    code, message = status_of(lambda: client.get_model_metadata("broken", client_timeout=CALL_TIMEOUT_S))
    check(code == "UNAVAILABLE" and "not ready" in message, f"metadata of the broken model: {code} '{message}'")
    code, message = status_of(lambda: client.get_model_config("no_such_model", client_timeout=CALL_TIMEOUT_S))
    check(code == "NOT_FOUND", f"config of an unknown model: {code} '{message}'")
    image = grpcclient.InferInput("images", list(images.shape), "FP32")
    image.set_data_from_numpy(images)
    code, message = status_of(lambda: client.infer("yolov8n", [image], sequence_id=5, client_timeout=CALL_TIMEOUT_S))
    check(code == "INVALID_ARGUMENT" and "sequence" in message, f"sequence_id (unsupported): {code} '{message}'")
    code, message = status_of(lambda: client.infer("yolov8n", [image], client_timeout=CALL_TIMEOUT_S, outputs=[
        grpcclient.InferRequestedOutput("output0", class_count=3)]))
    check(code == "INVALID_ARGUMENT" and "classification" in message,
          f"class_count (classification, unsupported): {code} '{message}'")
    # Over --max-request-bytes (4 MB): 1x3x640x640 floats are 4.9 MB.
    big = np.zeros((1, 3, 640, 640), dtype=np.float32)
    code, message = status_of(lambda: infer(client, "yolov8n", {"images": big}, ["output0"]))
    check(code == "RESOURCE_EXHAUSTED", f"oversized message: {code} '{message}'")
    # Raw bytes that disagree with the declared shape, sent with the protocol's own stub (the client
    # library always sends matching bytes).
    with grpc.insecure_channel(url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        request = service_pb2.ModelInferRequest(model_name="yolov8n")
        tensor = request.inputs.add(name="images", datatype="FP32", shape=[1, 3, 320, 320])
        request.raw_input_contents.append(b"\0" * 20)
        try:
            stub.ModelInfer(request, timeout=CALL_TIMEOUT_S)
            fail("raw bytes of the wrong size were accepted")
        except grpc.RpcError as error:
            check(error.code() == grpc.StatusCode.INVALID_ARGUMENT and "images" in error.details(),
                  f"raw bytes of the wrong size: {error.code().name} '{error.details()}'")
        del tensor
    check_infer(client, "yolov8n", yolo, 8)  # and still serving


# --- the load test's second process --------------------------------------------------------------

def load_worker(url, requests, threads, time_limit):
    """Sends `requests` inferences of scale_batched (y = 2x + 1, rows of 1..3) from `threads`
    connections; every answer must come back, OK and exact. Prints one summary line; exit 0 when
    every request was answered and right."""
    import numpy as np
    import tritonclient.grpc as grpcclient
    import make_repository
    deadline = time.monotonic() + time_limit
    counts = {"sent": 0, "ok": 0, "wrong": 0, "failed": 0}
    lock = threading.Lock()
    errors = []

    def work(t):
        client = grpcclient.InferenceServerClient(url)
        rng = np.random.default_rng(t)
        for i in range(t, requests, threads):
            if time.monotonic() > deadline:
                break
            x = rng.standard_normal((1 + i % 3, make_repository.BATCHED_WIDTH)).astype(np.float32)
            with lock:
                counts["sent"] += 1
            try:
                y = infer(client, make_repository.BATCHED, {"x": x}, ["y"])["y"]
                right = y.shape == x.shape and np.array_equal(y, x * np.float32(2) + np.float32(1))
                with lock:
                    counts["ok" if right else "wrong"] += 1
            except Exception as error:  # noqa: BLE001: counted and shown
                with lock:
                    counts["failed"] += 1
                    errors.append(str(error))
        client.close()

    start = time.monotonic()
    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.monotonic() - start
    print(f"load: {counts['sent']} sent, {counts['ok']} answered right, {counts['wrong']} wrong, "
          f"{counts['failed']} failed, in {elapsed:.1f} s from {threads} connections", flush=True)
    for error in errors[:5]:
        print(f"load: error: {error}")
    return 0 if counts["ok"] == requests else 1


def check_load(url, requests, threads, time_limit):
    command = [sys.executable, os.path.abspath(__file__), "--load-worker", url, "--requests", str(requests),
               "--threads", str(threads), "--time-limit", str(time_limit)]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=time_limit + 60)
    except subprocess.TimeoutExpired:
        fail(f"the load process did not finish within {time_limit + 60} s")
    sys.stdout.write(run.stdout)
    check(run.returncode == 0, f"load from a second process: all {requests} requests answered right"
          + ("" if run.returncode == 0 else f" (exit {run.returncode})\n{run.stderr}"))


def check_shutdown_finishes_calls(loom_serve, repo, device, calls=64):
    """SIGTERM while calls are in flight: every call started ends answered right, or refused as
    UNAVAILABLE (the server no longer accepts); none is lost (no answer) or cut (CANCELLED, ...),
    and loom-serve exits 0."""
    import numpy as np
    import tritonclient.grpc as grpcclient
    import make_repository
    import serve_support
    outcomes = []
    done = threading.Semaphore(0)
    server = serve_support.Server(loom_serve, repo, http=None, grpc=0, device=device)
    server.start()
    try:
        client = grpcclient.InferenceServerClient(server.url("gRPC"))
        # The connection up first, so the calls below go out on it at once.
        check(client.is_server_live(), "gRPC ServerLive before the calls in flight")
        x = np.arange(2 * make_repository.BATCHED_WIDTH, dtype=np.float32).reshape(2, -1)
        tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)

        def finished(result, error):
            if error is not None:
                outcomes.append(str(error.status()).replace("StatusCode.", ""))
            else:
                outcomes.append("right" if np.array_equal(result.as_numpy("y"), x * 2 + 1) else "wrong")
            done.release()

        for _ in range(calls):
            client.async_infer(make_repository.BATCHED, [tensor], finished,
                               outputs=[grpcclient.InferRequestedOutput("y")], client_timeout=CALL_TIMEOUT_S)
        server.stop()  # SIGTERM now, calls in flight; exit 0 required
    finally:
        server.kill()
    for _ in range(calls):
        if not done.acquire(timeout=CALL_TIMEOUT_S):
            fail(f"SIGTERM with calls in flight: only {len(outcomes)} of {calls} calls ended")
    client.close()
    # loom-serve's count of the calls its handler accepted (and answered) and refused; the calls gRPC
    # itself turned away once it stopped listening (CANCELLED) never reached a handler.
    said = re.search(r"gRPC: (\d+) inference calls answered, (\d+) refused while stopping", server.stderr_text())
    if not said:
        fail("loom-serve did not report its gRPC calls when stopping:\n" + server.stderr_text())
    answered, refused = int(said.group(1)), int(said.group(2))
    counts = {kind: outcomes.count(kind) for kind in sorted(set(outcomes))}
    # A call that never reached a handler (sent after gRPC stopped listening, or before the
    # connection was up on a loaded machine) also ends UNAVAILABLE on the client's side, so the
    # clients' UNAVAILABLE count is at least the server's refusals, not equal to it.
    check(set(outcomes) <= {"right", "UNAVAILABLE", "CANCELLED"} and counts.get("right", 0) == answered
          and counts.get("UNAVAILABLE", 0) >= refused,
          f"SIGTERM with {calls} calls in flight: loom-serve exited 0; each call it accepted ({answered}) was "
          f"answered right, {refused} refused as UNAVAILABLE, the rest never reached it: {counts}")


def check_port_in_use(loom_serve, work_dir, endpoint):
    """A second loom-serve asked for the first one's gRPC port exits 1 naming address and port."""
    import serve_support
    address, port = endpoint
    empty = os.path.join(work_dir, "empty_repository")
    os.makedirs(empty, exist_ok=True)
    run = serve_support.run_loom_serve([loom_serve, "--model-repository", empty, "--device", "cpu", "--address",
                                        address, "--http-port", "-1", "--metrics-port", "-1", "--grpc-port",
                                        str(port)])
    said = [line for line in run.stderr.splitlines() if line.startswith("loom-serve:")]
    check(run.returncode == 1 and any(f"{address}:{port}" in line for line in said),
          f"gRPC port in use: exit {run.returncode}, {said[-1] if said else run.stderr!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", help="the test venv (scripts/setup-test-venv)")
    parser.add_argument("--loom-serve", help="the loom-serve binary")
    parser.add_argument("--protoc", default="protoc", help="protoc, to compile proto/grpc_predict_v2.proto")
    parser.add_argument("--proto", default=os.path.join(HERE, "..", "..", "proto", "grpc_predict_v2.proto"))
    parser.add_argument("--work-dir", help="where the model repository is written")
    parser.add_argument("--device", default="cpu", help="loom-serve's --device (cpu by default)")
    parser.add_argument("--requests", type=int, default=1000, help="the load test's requests")
    parser.add_argument("--threads", type=int, default=8, help="the load test's connections")
    parser.add_argument("--time-limit", type=float, default=120, help="the load test's limit in seconds")
    parser.add_argument("--load-worker", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load_worker:
        sys.exit(load_worker(args.load_worker, args.requests, args.threads, args.time_limit))
    if not (args.venv and args.loom_serve and args.work_dir):
        parser.error("--venv, --loom-serve and --work-dir are required")
    enter_venv(args.venv, TOOL)
    try:
        import tritonclient.grpc  # noqa: F401
        import check_model
        check_model.import_reference_tools()
    except ImportError as error:
        print(f"{TOOL}: {error} (scripts/setup-test-venv installs tritonclient[grpc]); skipping")
        sys.exit(SKIP)
    import make_repository
    import serve_support
    import tritonclient.grpc as grpcclient

    print("protocol file against tritonclient's:", flush=True)
    compare_proto(args.protoc, os.path.abspath(args.proto))
    if not serve_support.supports_flag(args.loom_serve, "--grpc-port"):
        fail(f"{args.loom_serve} has no --grpc-port (built without gRPC?)")

    repo = make_repository.build(os.path.join(args.work_dir, "repository"))
    yolo, minilm = Reference("yolov8n_nudenet"), Reference("minilm_l3")
    print("loom-serve over gRPC:", flush=True)
    try:
        with serve_support.Server(args.loom_serve, repo, http=None, grpc=0, device=args.device,
                                  extra=["--max-request-bytes", str(4_000_000)]) as server:
            url = server.url("gRPC")
            print(f"  gRPC at {url}", flush=True)
            client = grpcclient.InferenceServerClient(url)
            check_health_and_metadata(client, ["yolov8n", "minilm", make_repository.BATCHED])
            check_model_metadata(client, "yolov8n", yolo, make_repository.PUBLISHED["yolov8n"][2]["dims"])
            check_model_metadata(client, "minilm", minilm, make_repository.PUBLISHED["minilm"][2]["dims"])
            check_model_config(client, "yolov8n", 0, {"images": ("TYPE_FP32", [1, 3, 320, 320])})
            check_model_config(client, make_repository.BATCHED, make_repository.BATCHED_MAX,
                               {"x": ("TYPE_FP32", [make_repository.BATCHED_WIDTH])})
            check_infer(client, "yolov8n", yolo, 1)
            check_infer(client, "minilm", minilm, 1)
            check_concurrent(url, "minilm", minilm, clients=4, requests=3)
            check_bad_requests(client, url, yolo, minilm)
            check_load(url, args.requests, args.threads, args.time_limit)
            check_port_in_use(args.loom_serve, args.work_dir, server.endpoints["gRPC"])
            check(client.is_server_live(client_timeout=CALL_TIMEOUT_S), "still live after the load")
            client.close()
        check(True, "SIGTERM: loom-serve exited 0")
        check_shutdown_finishes_calls(args.loom_serve, repo, args.device)
    except serve_support.ServeError as error:
        fail(str(error))
    print(f"{TOOL}: all checks passed")


if __name__ == "__main__":
    main()
