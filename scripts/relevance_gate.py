#!/usr/bin/env python3
"""A regression gate for CI: upload a run to Relevance Judge, compare it with a baseline,
fail when the mean fell by more than allowed, and name the queries that lost the most.

Python 3.10+ and its standard library only, so that it runs on any CI machine:

    RELEVANCE_JUDGE_TOKEN=... python3 relevance_gate.py --url https://judge.example.org \\
        --project shop --baseline prod-2026-11 --run candidate.run --name "ci-$GIT_SHA" \\
        --max-drop 0.01

Or capture the candidate from the team's search engine (an endpoint configured in the
app) with a request template of the branch, instead of uploading a run:

    python3 relevance_gate.py --url ... --project shop --baseline prod-2026-11 \\
        --endpoint prod-es --template search/template.json --name "ci-$GIT_SHA"

Such a candidate stays out of the raters' pool unless ``--judge`` keeps it as a result
list (its unjudged hits then join the queue); a re-run with the same ``--name``
replaces it, and ``DELETE /api/captures/<id>/`` (printed) removes it in one call.

Exit status: 0 the gate passed, 1 the mean fell by more than ``--max-drop``, 2 the
gate could not run (bad arguments, an unreachable server, an error from the API), and
with ``--require-decided`` 3 when the gate would pass but the comparison is not
decided yet: unjudged hits
could still change the answer (the bounds of the difference cross zero) or the test
does not reject at ``--alpha``. The verdict (B better, A better, no difference shown,
not decided yet), each list's coverage of its top k and the unjudged pairs that stand
in the way are printed either way.
The metric's parameters are the project's unless given with ``--param name=value``
(k, gain, discount, ideal, ideal_depth, unjudged, consensus, ...: any the API takes).
"""

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

PASSED, REGRESSION, CANNOT_RUN, NOT_DECIDED = 0, 1, 2, 3
DECISIONS = {
    "b_better": "B better",
    "a_better": "A better",
    "no_difference": "no difference shown",
    "not_decided": "not decided yet: the unjudged hits could still change the answer",
}
TIMEOUT = 300


class GateError(Exception):
    """The gate cannot run; the message says why."""


class Api:
    """The few calls the gate makes, with the token, raising GateError on any failure."""

    def __init__(self, url: str, token: str):
        self.base = url.rstrip("/") + "/api/"
        self.token = token

    def get(self, path: str, params: dict | None = None) -> dict:
        query = f"?{urlencode(params)}" if params else ""
        return self._call(Request(self._url(path) + query))

    def post_json(self, path: str, data: dict) -> dict:
        request = Request(self._url(path), data=json.dumps(data).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        return self._call(request)

    def post_files(self, path: str, fields: dict, files: dict[str, Path]) -> dict:
        boundary = uuid.uuid4().hex
        body = _multipart(boundary, fields, files)
        request = Request(self._url(path), data=body, method="POST")
        request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
        return self._call(request)

    def _url(self, path: str) -> str:
        return path if path.startswith("http") else self.base + path

    def _call(self, request: Request) -> dict:
        request.add_header("Authorization", f"Token {self.token}")
        request.add_header("Accept", "application/json")
        try:
            with urlopen(request, timeout=TIMEOUT) as response:
                return json.load(response)
        except HTTPError as error:
            raise GateError(f"{request.full_url}: HTTP {error.code}: {_errors(error)}") from None
        except (URLError, OSError) as error:
            raise GateError(f"{request.full_url}: {error}") from None


def _errors(error: HTTPError) -> str:
    """The API's error list in one line, or the raw body."""
    text = error.read().decode(errors="replace")
    try:
        errors = json.loads(text)["errors"]
    except (ValueError, KeyError, TypeError):
        return text[:500]
    return "; ".join(_error(error) for error in errors)


def _error(error: dict) -> str:
    """``line 3, rank: message`` (or as much of it as the error names)."""
    where = [f"line {error['line']}"] if error.get("line") else []
    where += [error["field"]] if error.get("field") else []
    return f"{', '.join(where)}: {error['message']}" if where else error["message"]


def _multipart(boundary: str, fields: dict, files: dict[str, Path]) -> bytes:
    parts = []
    for name, value in fields.items():
        header = f'Content-Disposition: form-data; name="{name}"'
        parts.append(f"--{boundary}\r\n{header}\r\n\r\n{value}\r\n".encode())
    for name, path in files.items():
        header = f'Content-Disposition: form-data; name="{name}"; filename="{path.name}"'
        parts.append(
            f"--{boundary}\r\n{header}\r\nContent-Type: application/octet-stream\r\n\r\n".encode()
            + path.read_bytes()
            + b"\r\n"
        )
    return b"".join(parts) + f"--{boundary}--\r\n".encode()


def result_list_id(api: Api, project: str, wanted: str) -> int:
    """The id of the project's result list named ``wanted`` (or with that id)."""
    page = f"projects/{project}/result-lists/?page_size=1000"
    while page:
        found = api.get(page)
        for result_list in found["results"]:
            if wanted in (result_list["name"], str(result_list["id"])):
                return result_list["id"]
        page = found["next"]
    raise GateError(f"Project {project} has no result list named {wanted!r}.")


def upload(api: Api, args) -> tuple[int, str]:
    fields = {"format": args.format, "name": args.name or Path(args.run).stem}
    if args.engine:
        fields["engine"] = args.engine
    files = {"file": Path(args.run)}
    if args.queries:
        files["queries"] = Path(args.queries)
    created = api.post_files(f"projects/{args.project}/result-lists/import/", fields, files)
    result_list = created["result_list"]
    print(
        f"Uploaded {args.run} as result list {result_list['id']} ({result_list['name']!r}): "
        f"{created['rows']:,} hits."
    )
    return result_list["id"], result_list["name"]


def endpoint_id(api: Api, project: str, wanted: str) -> int:
    """The id of the project's search endpoint named ``wanted``."""
    for endpoint in api.get(f"projects/{project}/endpoints/", {"name": wanted})["results"]:
        if endpoint["name"] == wanted:
            return endpoint["id"]
    raise GateError(f"Project {project} has no search endpoint named {wanted!r}.")


def capture(api: Api, args, baseline: int) -> dict:
    """Capture the candidate from the endpoint (a gate try, replacing one of the same
    name), wait for it, and keep it as a result list with ``--judge``."""
    endpoint = endpoint_id(api, args.project, args.endpoint)
    name = args.name or f"gate {Path(args.template).stem if args.template else args.endpoint}"
    data = {"kind": "gate", "name": name, "baseline": baseline, "replace": True}
    if args.template:
        data["template"] = Path(args.template).read_text()
    started = api.post_json(f"endpoints/{endpoint}/captures/", data)
    found = _finished(api, started["url"])
    if found["status"] == "failed":
        raise GateError(f"The capture from {args.endpoint} failed: {found['error']}")
    print(
        f"Captured {name!r} from {args.endpoint} (template v{found['version']}): "
        f"{found['total'] - found['failed']:,} queries answered, {found['failed']:,} failed. "
        f"Delete it with: DELETE {found['url']}"
    )
    if args.judge:
        found = api.post_json(f"captures/{found['id']}/keep/", {"name": name})
        print(f"Kept as result list {found['result_list']}: its unjudged hits join the queue.")
    return found


def _finished(api: Api, url: str) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = api.get(url)
        if found["status"] in ("done", "failed"):
            return found
        if time.monotonic() > deadline:
            raise GateError(f"The capture did not finish within {TIMEOUT} s: {url}")
        time.sleep(1)


def try_report(found: dict, show: int) -> str:
    """The verdict of a candidate kept out of the pool: the try's report and gate."""
    report, gate = found["report"], found["gate"]
    lines = [
        f"{report['metric']}, grades of now ({report['source']}):",
        f"  A (baseline): {_mean(report['baseline_mean'])}   B {found['name']}: "
        f"{_mean(report['mean_in_common'])} over {report['queries_in_common']:,} queries in "
        f"common: {report['wins']:,} better, {report['ties']:,} tied, {report['losses']:,} worse.",
    ]
    if report["unjudged"]:
        lines.append(
            f"  Provisional: {report['unjudged']:,} hits of B within the cut-off have no grade "
            "(they count as irrelevant; --judge queues them for the raters)."
        )
    losses = [row for row in report["per_query"] if (row["delta"] or 0) < 0][:show]
    if losses:
        lines.append(f"  Biggest losses ({len(losses)} of {report['losses']:,}):")
        lines.append(f"    {'query':<20} {'A':>7} {'B':>7} {'change':>8}  text")
        lines += [
            f"    {row['query_external_id']:<20} {row['baseline']:7.4f} {row['value']:7.4f} "
            f"{row['delta']:+8.4f}  {row['query']}"
            for row in losses
        ]
    lines.append(f"{'PASSED' if gate['passed'] else 'FAILED'}: {gate['reason']}")
    return "\n".join(lines)


def report(comparison: dict, show: int) -> str:
    """The verdict, the two means and the queries that lost the most, as plain text."""
    a, b, test, interval = (comparison[key] for key in ("a", "b", "test", "interval"))
    spec = comparison["spec"]
    lines = [
        f"{spec['label']} ({spec['name']}), as of {comparison['as_of']}:",
        f"  A {a['name']}: {_mean(a['mean'])}   B {b['name']}: {_mean(b['mean'])}   "
        f"change {comparison['mean_difference']:+.4f} "
        f"(95% CI {_mean(interval['low'])} to {_mean(interval['high'])}, "
        f"p = {test['p_value']:.3g})",
        f"  {_compared(comparison, spec)}: {comparison['wins']:,} better, "
        f"{comparison['ties']:,} tied, {comparison['losses']:,} worse.",
    ]
    if comparison["provisional"]:
        lines.append(
            f"  Provisional: {a['unjudged']:,} hits of A and {b['unjudged']:,} of B within the "
            "cut-off have no grade yet (they count as irrelevant until raters grade them)."
        )
    lines += _coverage(comparison)
    losses = [row for row in comparison["results"] if row["delta"] < 0][:show]
    if losses:
        lines.append(f"  Biggest losses ({len(losses)} of {comparison['losses']:,}):")
        lines.append(f"    {'query':<20} {'A':>7} {'B':>7} {'change':>8}  text")
        lines += [
            f"    {row['external_id']:<20} {row['a']:7.4f} {row['b']:7.4f} "
            f"{row['delta']:+8.4f}  {row['text']}"
            for row in losses
        ]
    gate = comparison["gate"]
    lines.append(f"{'PASSED' if gate['passed'] else 'FAILED'}: {gate['reason']}")
    return "\n".join(lines)


def _coverage(comparison: dict) -> list[str]:
    """Each list's coverage of its top k, the bounds the unjudged hits leave open and the
    verdict, with the unjudged pairs that stand in the way (absent from older servers)."""
    verdict = comparison.get("verdict")
    if verdict is None:
        return []
    lines = []
    for side, label in (("a", "A"), ("b", "B")):
        found = comparison[side]
        judged = found.get("judged_at_k")
        lines.append(
            f"  Coverage {label} {found['name']}: judged@k "
            f"{'n/a' if judged is None else f'{judged:.1%}'}, "
            f"{found.get('unjudged_in_top_k', 0):,} unjudged in the top k, "
            f"{found.get('queued', 0):,} of them in the raters' queue."
        )
    bounds = comparison["bounds"]
    lines.append(
        f"  Bounds of the change over every grade the unjudged hits could get: "
        f"{bounds['low']:+.4f} to {bounds['high']:+.4f}."
    )
    lines.append(
        f"VERDICT: {DECISIONS[verdict['decision']]} ({verdict['unjudged_pairs']:,} unjudged "
        f"pairs in the top k; alpha {verdict['alpha']:g}). {verdict['reason']}"
    )
    return lines


def _compared(comparison: dict, spec: dict) -> str:
    """Which queries the means are over: under a mean over all queries (trec_eval -c),
    every judged query and every query either list returned, each list counting 0 for
    the queries it did not return."""
    if spec.get("mean_over") != "all":
        return f"{comparison['queries']:,} queries in common"
    missing_a, missing_b = (comparison[side].get("unreturned", 0) for side in ("a", "b"))
    return (
        f"{comparison['queries']:,} queries, mean over all: A did not return {missing_a:,}, "
        f"B did not return {missing_b:,} (each counts 0)"
    )


def _mean(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server, e.g. https://judge.example.org")
    parser.add_argument("--project", required=True, help="the project's slug")
    parser.add_argument("--baseline", required=True, help="result list A: its name or id")
    candidate = parser.add_mutually_exclusive_group(required=True)
    candidate.add_argument("--run", help="a run file to upload as result list B")
    candidate.add_argument("--candidate", help="result list B, already uploaded: name or id")
    candidate.add_argument("--endpoint", help="capture B from this search endpoint of the app")
    parser.add_argument("--template", help="with --endpoint: the request template (JSON) to send")
    parser.add_argument(
        "--judge", action="store_true", help="with --endpoint: keep B, so raters grade its hits"
    )
    parser.add_argument("--format", default="trec", choices=["trec", "json"], help="of --run")
    parser.add_argument("--name", help="name of the uploaded list (default: the file's stem)")
    parser.add_argument("--engine", help="engine configuration of the uploaded list")
    parser.add_argument("--queries", help="CSV id,text naming each qid of a TREC run")
    parser.add_argument("--max-drop", type=float, default=0.0, help="default 0: no drop")
    parser.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="a metric parameter"
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="the test's level for the verdict"
    )
    parser.add_argument(
        "--require-decided",
        action="store_true",
        help="exit 3 unless the verdict is decided (B better, A better or no difference)",
    )
    parser.add_argument("--show", type=int, default=10, help="losing queries printed")
    parser.add_argument("--token", default=os.environ.get("RELEVANCE_JUDGE_TOKEN"))
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set RELEVANCE_JUDGE_TOKEN (a token from /api/token/)")
    if args.max_drop < 0:
        parser.error("--max-drop must not be negative")
    if not 0 < args.alpha < 1:
        parser.error("--alpha must lie strictly between 0 and 1")
    if args.template and not args.endpoint:
        parser.error("--template goes with --endpoint")
    if args.endpoint and args.param and not args.judge:
        parser.error(
            "--param needs --judge with --endpoint: a candidate out of the pool is "
            "compared under the project's metric"
        )
    if any("=" not in param for param in args.param):
        parser.error("--param takes NAME=VALUE, e.g. --param k=5")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    api = Api(args.url, args.token)
    try:
        baseline = result_list_id(api, args.project, args.baseline)
        if args.endpoint and not args.judge:
            found = capture(api, args, baseline)
            found = api.get(found["url"], {"max_drop": args.max_drop})
            print(try_report(found, args.show))
            return PASSED if found["gate"]["passed"] else REGRESSION
        if args.endpoint:
            candidate = capture(api, args, baseline)["result_list"]
        elif args.run:
            candidate, _ = upload(api, args)
        else:
            candidate = result_list_id(api, args.project, args.candidate)
        params = dict(param.split("=", 1) for param in args.param)
        params |= {"a": baseline, "b": candidate, "max_drop": args.max_drop}
        params["alpha"] = args.alpha
        params["page_size"] = max(args.show, 1)
        comparison = api.get(f"projects/{args.project}/compare/", params)
    except GateError as error:
        print(f"relevance_gate: {error}", file=sys.stderr)
        return CANNOT_RUN
    print(report(comparison, args.show))
    if not comparison["gate"]["passed"]:
        return REGRESSION
    decision = (comparison.get("verdict") or {}).get("decision")
    if args.require_decided and decision in (None, "not_decided"):
        return NOT_DECIDED
    return PASSED


if __name__ == "__main__":
    sys.exit(main())
