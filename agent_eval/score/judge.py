"""The LLM judge: rubric verdicts, the disk cache, and the judge's own usage.

A run is judged once per criterion it has (`rubric` → record `judge`, check `judge`;
`expected_outcome` → record `judge_expected_outcome`, check `judge:expected_outcome`). Identical
prompts within one process are asked once; every usable answer (PASS or FAIL) is cached on disk, so an
unchanged re-run makes no call, and an unusable one never is, so the next run asks again. The judge's
tokens and cost live in `JudgeUsage`, never in a run's metrics.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_eval.records import Case, Check, Trace, field_of
from agent_eval.limits import JUDGE_TIMEOUT_S
from agent_eval.errors import ConfigError
from agent_eval.score.judge_prompt import build_prompt, parse_verdict, shorten
from agent_eval.score.usage import LLMUsage

"""--judge-timeout: the bound on each judge (and simulator) request, the SDK's retries included."""
JUDGE_ERROR = "judge error"
"""Every judge error message starts with this, so `rescore` can tell it from an agent-side error."""


@dataclass(frozen=True)
class Criterion:
    """One judged field of a case: where its verdict goes in the run record, its check's name and its title."""

    field: str
    record: str
    check: str
    title: str


CRITERIA = (Criterion("rubric", "judge", "judge", "rubric"),
            Criterion("expected_outcome", "judge_expected_outcome", "judge:expected_outcome", "expected outcome"))
"""The judged criteria, the one list: case fields, run record keys, check names and labels all come from it."""
CRITERION_FIELDS = tuple(c.field for c in CRITERIA)


def judged_fields(case: Case) -> list[Criterion]:
    """The criteria this case asks the judge about (an empty string means no judge)."""
    return [c for c in CRITERIA if case.get(c.field)]


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/agent-eval/judge`, `~/.cache/agent-eval/judge` when unset (or not absolute)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "agent-eval" / "judge"


def cache_key(model: str, messages: list[dict[str, str]], base_url: str | None = None) -> str:
    """sha256 of the judge's endpoint (secrets removed; "" for the provider's default), model and full
    prompt: a verdict from another endpoint is never served."""
    from agent_eval.llm import redact_url

    endpoint = (redact_url(base_url) or "").rstrip("/")
    return hashlib.sha256(orjson.dumps({"base_url": endpoint, "model": model, "messages": messages})).hexdigest()


class JudgeCache:
    """Answers on disk, one small JSON file per key; a torn or foreign file counts as a miss."""

    def __init__(self, root: Path, usable: Callable[[str], bool] | None = None) -> None:
        self.root = root
        # Which answers are served: PASS or FAIL by default (the pairwise judge's A, B or TIE for its own).
        self.usable = usable or (lambda answer: parse_verdict(answer) is not None)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        try:
            answer = orjson.loads(self._path(key).read_bytes()).get("answer")
        except (OSError, orjson.JSONDecodeError, AttributeError):
            return None
        # An unusable answer is never served (an older version cached them): the judge is asked again.
        return answer if isinstance(answer, str) and self.usable(answer) else None

    def put(self, key: str, model: str, answer: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(orjson.dumps({"model": model, "answer": answer}))
            os.replace(tmp, path)
        except OSError:
            pass  # an unwritable cache costs a re-ask next time, never a run


@dataclass
class JudgeUsage(LLMUsage):
    """The judge's own spend (summary.judge): the LLMUsage fields plus answers served from the cache."""

    cache_hits: int = 0
    deduplicated: int = 0  # of cache_hits, the prompts asked before in this process (not from the disk cache)

    def as_summary(self, model: str | None, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
        """summary.judge: calls (API calls), cache_hits, tokens, cost_usd, errors."""
        return {"cache_hits": self.cache_hits, **super().as_summary(model, pricing)}


@dataclass
class JudgeOutcome:
    """What judging one run adds: verdict records by run-record key, check entries, and an error."""

    records: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    error: str | None = None


Answer = tuple[str | None, str | None]  # (the judge's text, or None; an error message, or None)


class JudgeClient:
    """The judge model's client: one answer per distinct prompt (memo, then the disk cache, then the API),
    the spend in `usage`. The rubric judge and the pairwise judge (score/pairwise.py) both ask through it."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None,
                 cache: JudgeCache | None = None, repeat: int | None = None,
                 timeout_s: float | None = JUDGE_TIMEOUT_S) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.base_url = base_url
        self.api_key = api_key
        self.cache = cache
        self.repeat = repeat  # --judge-repeat N: N uncached answers per prompt
        self.usage = JudgeUsage()
        self._asked: dict[str, asyncio.Task[Answer]] = {}

    async def _ask(self, messages: list[dict[str, str]]) -> Answer:
        """One answer per distinct prompt in this process: memo, then disk cache, then the API."""
        from agent_eval.provider import tape  # the HTTP client's types: when the judge asks, not to validate

        if tape.current() is not None:  # --record / --replay: each run's judge answer is in its own cassette
            return await self._call(messages)
        key = cache_key(self.model, messages, self.base_url)
        task = self._asked.get(key)
        if task is not None:
            self.usage.cache_hits += 1
            self.usage.deduplicated += 1
            return await asyncio.shield(task)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            self.usage.cache_hits += 1
            done: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            done.set_result((cached, None))
            self._asked[key] = done  # type: ignore[assignment]
            return cached, None
        task = asyncio.ensure_future(self._call(messages, key))
        self._asked[key] = task
        return await asyncio.shield(task)

    async def _parsed_answers(self, messages: list[dict[str, str]],
                              parse: Callable[[str | None], tuple[str, str] | None],
                              unusable: Callable[[str | None], str]) -> tuple[list[tuple[str, str]], str | None]:
        """The parsed answers to one prompt (N uncached ones under --judge-repeat N, else one), or the
        first error (the API's, or `unusable` of an answer `parse` refuses), counted in usage.errors."""
        if self.repeat:
            key = cache_key(self.model, messages, self.base_url)
            answers = list(await asyncio.gather(*(self._call(messages, key) for _ in range(self.repeat))))
        else:
            answers = [await self._ask(messages)]
        parsed = []
        for text, error in answers:
            choice = parse(text) if error is None else None
            if choice is None:
                self.usage.errors += 1
                return [], error or unusable(text)
            parsed.append(choice)
        return parsed, None

    async def _call(self, messages: list[dict[str, str]], key: str | None = None) -> Answer:
        """One API call at temperature 0; an answer the cache serves goes to it under `key`, others never."""
        from agent_eval.errors import ProviderError
        from agent_eval.llm import complete
        from agent_eval.provider import tape

        self.usage.calls += 1
        try:
            answer = await complete(self.base_url, self.api_key,
                                    {"model": self.model, "messages": messages, "temperature": 0},
                                    self.timeout_s, role="judge")
        except ProviderError as exc:
            return None, f"{JUDGE_ERROR}: {exc}"
        self.usage.add(answer)
        text = answer.content or ""
        if self.cache is not None and key is not None and self.cache.usable(text) and tape.current() is None:
            self.cache.put(key, self.model, text)
        return text, None


class Judge(JudgeClient):
    """Asks the judge model about runs; one instance per process run (`run` or `rescore`)."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None,
                 cache: JudgeCache | None = None, repeat: int | None = None,
                 timeout_s: float | None = JUDGE_TIMEOUT_S) -> None:
        super().__init__(model, base_url, api_key, cache, repeat, timeout_s)
        self.agreement: dict[str, list[bool]] = {}  # case id -> per judged run (repeat mode only)

    async def judge_run(self, case: Case, trace: Trace) -> JudgeOutcome:
        """Ask about every criterion of the case; a judge error becomes the outcome's error."""
        criteria = judged_fields(case)
        outcome = JudgeOutcome()
        if not criteria:
            return outcome
        asks = [self._judge_one(build_prompt(trace, field_of(case, c.field), c.field)) for c in criteria]
        results = await asyncio.gather(*asks)
        unanimous = True
        for criterion, (record, error, agreed) in zip(criteria, results, strict=True):
            unanimous = unanimous and agreed
            outcome.records[criterion.record] = record
            if record is not None:
                outcome.checks.append({"name": criterion.check, "passed": record["verdict"] == "PASS",
                                       "detail": record["reason"] or f"the judge said {record['verdict']}"})
            if error is not None and outcome.error is None:
                outcome.error = error
        if self.repeat:
            self.agreement.setdefault(case["id"], []).append(unanimous)
        return outcome

    async def _judge_one(self, messages: list[dict[str, str]]) -> tuple[dict[str, Any] | None, str | None, bool]:
        """(record, error, all verdicts identical) for one prompt; under --judge-repeat the majority verdict,
        or an error on a tie."""
        parsed, error = await self._parsed_answers(messages, parse_verdict, unusable)
        if error is not None:
            return None, error, False
        if not self.repeat:
            return {"verdict": parsed[0][0], "reason": parsed[0][1], "model": self.model}, None, True
        n = self.repeat
        votes = {"PASS": sum(v == "PASS" for v, _ in parsed), "FAIL": sum(v == "FAIL" for v, _ in parsed)}
        agreed = 0 in votes.values()
        if votes["PASS"] == votes["FAIL"]:
            self.usage.errors += 1
            tie = f"a tie over {n} answers ({votes['PASS']} PASS, {votes['FAIL']} FAIL)"
            return None, f"{JUDGE_ERROR}: {tie}", agreed
        majority = "PASS" if votes["PASS"] > votes["FAIL"] else "FAIL"
        reason = next(r for v, r in parsed if v == majority)
        return {"verdict": majority, "reason": reason, "model": self.model, "votes": votes}, None, agreed

    def summary(self, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
        """summary.judge of this judge's calls."""
        return self.usage.as_summary(self.model, pricing)


def unusable(answer: str | None) -> str:
    """The error message of an answer that is neither PASS nor FAIL."""
    shown = shorten(" ".join((answer or "").split()), 120) or "(empty)"
    return f"{JUDGE_ERROR}: the answer does not start with PASS or FAIL: {shown!r}"


def empty_summary() -> dict[str, Any]:
    """summary.judge when no judge was used."""
    return JudgeUsage().as_summary(None, None)


def needs_judge(cases: list[Case]) -> Case | None:
    """The first case that the judge would be asked about, or None."""
    return next((c for c in cases if judged_fields(c)), None)


def require_judge(model: str | None, api_key: str | None, case: Case, cases_file: Any) -> None:
    """Exit-2 check: a case with a judged criterion needs a judge model and key."""
    what = judged_fields(case)[0].field
    head = f"case {case['id']!r} of {cases_file} has {'a rubric' if what == 'rubric' else 'an ' + what}"
    if not model:
        raise ConfigError(f"{head}, and the judge has no model: pass --judge-model NAME, set "
                          "AGENT_EVAL_JUDGE_MODEL, or set \"judge\": {\"model\": ...} in the suite block; "
                          "or pass --no-judge to skip rubric-only cases.")
    if not api_key:
        raise ConfigError(f"{head}, and the judge has no API key: set AGENT_EVAL_JUDGE_API_KEY (or "
                          "OPENAI_API_KEY, which it falls back to); or pass --no-judge to skip rubric-only "
                          "cases.")


def build_judge(judge_on: bool, model: str | None, base_url: str | None, api_key: str | None,
                no_cache: bool, cases: list[Case], repeat: int | None = None,
                timeout_s: float | None = JUDGE_TIMEOUT_S) -> Judge | None:
    """The judge for these cases, or None when judging is off, unconfigured, or no case needs it.

    Whether a runnable case lacks a judge is `require_judge`'s question, asked before anything runs.
    """
    from agent_eval.redaction import remember_secret

    remember_secret(api_key)  # a scorer's or an agent's exception may quote it (redaction.py)
    if not judge_on or not model or needs_judge(cases) is None:
        return None
    cache = None if no_cache else JudgeCache(default_cache_dir())
    return Judge(model, base_url, api_key, cache, repeat, timeout_s)


def runs_to_judge(cases: list[Case], entries: list[Any]) -> int:
    """summary.runs_to_judge, with judging on: the runs, not in error, of the cases with a rubric or an
    expected outcome (those the judge gave no verdict failed a deterministic check first)."""
    wanted = {str(c.get("id")) for c in cases if judged_fields(c)}
    return sum(1 for e in entries if str(e.get("id")) in wanted for r in e.get("runs") or []
               if r.get("status") != "error")


def judge_summary(judge: Judge | None, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
    """summary.judge: this judge's usage, or zeros when none was used."""
    return judge.summary(pricing) if judge is not None else empty_summary()
