"""--ray's settings checked before Ray starts: its runtime_env (JSON) and whether Ray is installed."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError


def parse_runtime_env(raw: str) -> dict[str, Any]:
    """--ray-runtime-env as a dict; what can be checked without starting Ray is checked here."""
    import orjson

    try:
        env = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"--ray-runtime-env is not valid JSON ({exc}); give a JSON object such as "
                          "'{\"pip\": [\"requests\"], \"env_vars\": {\"A\": \"1\"}}'.") from None
    if not isinstance(env, dict):
        raise ConfigError("--ray-runtime-env must be a JSON object (Ray's runtime_env: pip, env_vars, "
                          "py_modules, ...).")
    if "working_dir" in env:
        raise ConfigError("--ray-runtime-env may not set working_dir: the case file's folder is the job's "
                          "working_dir; give other code with \"py_modules\".")
    env_vars = env.get("env_vars")
    if env_vars is not None:
        if not isinstance(env_vars, dict):
            raise ConfigError("--ray-runtime-env: env_vars must be an object of names and string values, "
                              "such as {\"env_vars\": {\"MY_FLAG\": \"1\"}}.")
        for name, value in env_vars.items():
            if not isinstance(value, str):
                shown = orjson.dumps(value).decode()
                quoted = orjson.dumps({"env_vars": {name: shown}}).decode()
                raise ConfigError(f"--ray-runtime-env: env_vars[{name!r}] is {shown}, but Ray takes string "
                                  f"values only; quote it: {quoted}.")
    for entry in _local_modules(env.get("py_modules")):
        path = Path(entry)
        if not path.exists():
            where = "" if path.is_absolute() else f" (relative to the current directory: {path.absolute()})"
            raise ConfigError(f"--ray-runtime-env: py_modules entry {entry!r} does not exist{where}; give a "
                              "folder, a .py file or a .whl on this machine, or a remote URI.")
    return env


def _local_modules(py_modules: Any) -> list[str]:
    """The py_modules entries that name a path on this machine (not a URI); Ray checks the shape."""
    if not isinstance(py_modules, list):
        return []
    return [m for m in py_modules if isinstance(m, str) and "://" not in m]


def require_ray() -> None:
    """Exit 2 before anything runs when --ray is asked for and Ray is not installed."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ConfigError("--ray needs Ray, which is not installed: pip install 'agent-eval-trials[ray]' (or run "
                          "without --ray; --workers N needs nothing beyond Python).")
