"""The peers metrics.core is timed against: pytrec_eval, ranx, ir_measures, trec_eval.

Every runner returns a :class:`PeerResult` or raises :class:`PeerUnavailable`
with a message saying why, so the benchmark can skip a peer and go on.
"""

import importlib
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from core_data import timed


class PeerUnavailable(RuntimeError):
    """The peer is not installed or cannot run here; ``str()`` says why."""


@dataclass(frozen=True)
class PeerResult:
    name: str
    build_s: float  # Turning the in-memory dicts into the peer's own structures.
    warmup_s: float | None  # First call, when it compiles (numba); None if not timed apart.
    eval_s: float  # Fastest warm evaluation call.
    mean: float
    per_query: dict[str, float] | None  # qid -> value, when the peer gives them cheaply.


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise PeerUnavailable(f"{name} is not installed ({error})") from None


def pytrec_eval_result(qrels: dict, run: dict, k: int | None, repeat: int) -> PeerResult:
    pytrec_eval = _module("pytrec_eval")
    measure, key = ("ndcg", "ndcg") if k is None else (f"ndcg_cut.{k}", f"ndcg_cut_{k}")
    evaluator, build = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels, {measure}))
    values, seconds = timed(lambda: evaluator.evaluate(run), repeat)
    per_query = {qid: v[key] for qid, v in values.items()}
    mean = sum(per_query.values()) / len(per_query)
    return PeerResult("pytrec_eval", build, None, seconds, mean, per_query)


def ranx_result(qrels: dict, run: dict, k: int | None, repeat: int) -> PeerResult:
    ranx = _module("ranx")
    metric = "ndcg" if k is None else f"ndcg@{k}"
    (peer_qrels, peer_run), build = timed(
        lambda: (ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run))
    )

    def evaluate():
        return ranx.evaluate(peer_qrels, peer_run, metric, save_results_in_run=False)

    _, warmup = timed(evaluate)
    mean, seconds = timed(evaluate, repeat)
    return PeerResult("ranx", build, warmup, seconds, float(mean), None)


def ir_measures_result(qrels: dict, run: dict, k: int | None, repeat: int) -> PeerResult:
    ir_measures = _module("ir_measures")
    measure = ir_measures.nDCG if k is None else ir_measures.nDCG @ k
    evaluator, build = timed(lambda: ir_measures.evaluator([measure], qrels))
    values, seconds = timed(lambda: evaluator.calc_aggregate(run), repeat)
    return PeerResult("ir_measures", build, None, seconds, float(values[measure]), None)


IN_MEMORY_PEERS = (pytrec_eval_result, ranx_result, ir_measures_result)


def find_trec_eval(explicit: str | None, work: Path) -> tuple[Path, str]:
    """Locate a trec_eval binary; return it and a line saying where it came from.

    Looks at ``explicit`` (``--trec-eval``), ``$TREC_EVAL`` and ``trec_eval``
    on PATH. Failing those, it tries, inside the temporary folder ``work``
    (never the repository): building trec_eval from the C sources of the
    pytrec-eval-terrier 0.5.11 sdist, then the linux-amd64 trec_eval binary
    that the pyserini 2.4.0 sdist ships inside its anserini jar (jtreceval).
    """
    for candidate in (explicit, os.environ.get("TREC_EVAL"), shutil.which("trec_eval")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate), f"trec_eval binary: {candidate}"
    reasons = []
    for obtain in (_build_from_pytrec_eval_sdist, _binary_from_pyserini_sdist):
        try:
            return obtain(work)
        except PeerUnavailable as reason:
            reasons.append(str(reason))
    raise PeerUnavailable("no trec_eval binary (give --trec-eval PATH): " + "; ".join(reasons))


def _pip_download(requirement: str, folder: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    command += ["-d", str(folder), requirement]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    archives = list(folder.glob("*.tar.gz"))
    if not archives:
        last = (completed.stdout + completed.stderr).strip().splitlines()[-1:] or ["?"]
        raise PeerUnavailable(f"pip download {requirement} failed ({last[0]})")
    return archives[0]


def _build_from_pytrec_eval_sdist(work: Path) -> tuple[Path, str]:
    try:
        archive = _pip_download("pytrec-eval-terrier==0.5.11", work / "pytrec_eval_sdist")
    except PeerUnavailable as reason:
        # Its setup.py downloads trec_eval from GitHub while pip prepares it.
        raise PeerUnavailable(
            f"{reason}: the sdist fetches trec_eval's C code from GitHub"
        ) from None
    shutil.unpack_archive(archive, work / "pytrec_eval_src")
    headers = list((work / "pytrec_eval_src").rglob("trec_eval.h"))
    if not headers:
        raise PeerUnavailable("the pytrec-eval-terrier sdist holds no trec_eval C sources")
    source = headers[0].parent
    subprocess.run(["make", "-C", str(source)], check=True, capture_output=True, timeout=600)
    return source / "trec_eval", f"trec_eval built from {archive.name}"


def _binary_from_pyserini_sdist(work: Path) -> tuple[Path, str]:
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        raise PeerUnavailable("the pyserini jar's trec_eval is used on linux x86_64 only")
    archive = _pip_download("pyserini==2.4.0", work / "pyserini_sdist")
    with tarfile.open(archive) as sdist:
        jar = next((m for m in sdist.getmembers() if m.name.endswith("-fatjar.jar")), None)
        if jar is None:
            raise PeerUnavailable("the pyserini sdist holds no anserini jar")
        jar_file = sdist.extractfile(jar)
        with zipfile.ZipFile(jar_file) as bundle:
            binary = work / "trec_eval"
            binary.write_bytes(bundle.read("trec_eval/trec_eval-linux-amd64"))
    binary.chmod(0o755)
    version = subprocess.run([binary, "-v"], capture_output=True, text=True).stderr.strip()
    return binary, f"{version}, linux-amd64 binary from {archive.name} (anserini jar, jtreceval)"


@dataclass(frozen=True)
class CommandTiming:
    stdout: str
    wall_s: float
    cpu_s: float  # User plus system time of the command (and its children).


def run_command(command: list[str], timeout: float, cwd: Path | None = None) -> CommandTiming:
    """Run a command and time it. Raises PeerUnavailable on time-out or failure.

    CPU time is reported beside wall time because on a shared machine the
    wall time also counts waiting for a processor.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        completed, seconds = timed(
            lambda: subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=True
            )
        )
    except subprocess.TimeoutExpired:
        raise PeerUnavailable(f"did not finish within {timeout:.0f} s") from None
    except subprocess.CalledProcessError as error:
        raise PeerUnavailable(f"failed: {error.stderr.strip()[-300:]}") from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return CommandTiming(completed.stdout, seconds, cpu)


def all_value(output: str, measure: str) -> float:
    """The ``all`` value of ``measure`` in trec_eval-style three-column output."""
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == measure and fields[1] == "all":
            return float(fields[2])
    raise ValueError(f"no 'all' line for {measure}")


def temporary_folder() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="bench_metrics_core_")
