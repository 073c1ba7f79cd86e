"""Checks structural tags inside the real xgrammar (tests/engines/xgrammar.rs).

Reads JSON lines from stdin, one job each:
  {"id": 3, "tag": {"type": "structural_tag", "format": {...}}, "texts": ["...", ...]}
  {"id": 4, "legacy": {"structures": [...], "triggers": [...]}, "texts": [...]}
and writes one JSON line per job:
  {"id": 3, "accepted": [true, false, ...]}   or   {"id": 3, "error": "..."}
A text is accepted when the grammar matcher takes it whole and may then end
(it accepts the stop token). `--probe` prints xgrammar's version and exits.

xgrammar's package imports torch and transformers at import time, but the
compiler and the matcher used here are C++ behind tvm_ffi and never touch
them: torch is replaced by a stub whose values fail on any use (so a path
that did use it would error, not pass), and transformers by a stub when it is
not installed. tvm_ffi is imported first: it probes torch itself and copes
with its absence. The stubs exist only in this process.
"""

import json
import importlib.machinery
import sys
import types


class _Unusable:
    """What a stubbed torch hands out: fails on any use."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"torch used (.{name}) by a path the checker assumed torch-free")

    def __call__(self, *args, **kwargs):
        raise RuntimeError("torch used by a path the checker assumed torch-free")


class _StubModule(types.ModuleType):
    """A module whose attributes are placeholder classes (for annotations)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {})


def _import_xgrammar():
    import tvm_ffi  # noqa: F401  (before the stub, see the module doc)

    for name in ("torch", "transformers"):
        try:
            __import__(name)
        except ImportError:
            stub = _StubModule(name)
            # A spec, so that a real transformers asking `find_spec("torch")`
            # gets an answer (it then finds no installed distribution and
            # treats torch as absent) instead of a ValueError.
            stub.__spec__ = importlib.machinery.ModuleSpec(name, None)
            if name == "torch":
                stub.tensor = lambda *a, **k: _Unusable()
            sys.modules[name] = stub
    import xgrammar

    return xgrammar


def _matcher_factory(xgr):
    # A byte-level vocabulary: every output is a sequence of byte tokens, and
    # token 256 is the stop token.
    vocab = [bytes([b]) for b in range(256)] + [b"</s>"]
    info = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, stop_token_ids=[256])
    return xgr.GrammarCompiler(info, cache_enabled=False), 256


def _compile(xgr, compiler, job):
    if "legacy" in job:
        legacy = job["legacy"]
        items = [
            xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"])
            for s in legacy["structures"]
        ]
        return compiler.compile_structural_tag(items, legacy["triggers"])
    return compiler.compile_structural_tag(json.dumps(job["tag"]))


def _accepts(xgr, compiled, stop, text):
    matcher = xgr.GrammarMatcher(compiled)
    return bool(matcher.accept_string(text) and matcher.accept_token(stop) and matcher.is_terminated())


def main():
    xgr = _import_xgrammar()
    if "--probe" in sys.argv:
        from importlib.metadata import version

        print(f"xgrammar {version('xgrammar')} ({xgr.__name__} imported without torch)")
        return
    compiler, stop = _matcher_factory(xgr)
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            compiled = _compile(xgr, compiler, job)
            result = {"id": job["id"], "accepted": [_accepts(xgr, compiled, stop, t) for t in job["texts"]]}
        except Exception as e:  # a tag xgrammar refuses is a result, not a crash
            result = {"id": job["id"], "error": f"{type(e).__name__}: {e}"[:500]}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
