"""The asyncio client of genload's paced-stream rows (PERF.md).

A minimal client on the stack of the Python benchmark clients (asyncio + aiohttp, Debian's
python3-aiohttp): it sends the same requests as host/perf's Go clients (routed: N requests of
one prompt; array: one request of N prompts) to host/perf's StepServer, reads each response
line by line, stamps every `data:` line with time.time_ns() when it is read, parses it with
json.loads and keeps the stamp minus the send time the chunk's text carries. It prints one
JSON line with the fields of perf.ClientReport.

    python3 paced_client.py --url http://127.0.0.1:PORT --mode routed --n 64 --tokens 200
"""

import argparse
import asyncio
import json
import resource
import sys
import time

import aiohttp


def body(first, per, plen, tokens, array):
    """The request body of host/perf.PacedBody (same ids, same fields)."""
    prompts = [[1000 + ((first + i) * plen + k) % 150000 for k in range(plen)] for i in range(per)]
    return {
        "model": "paced",
        "prompt": prompts if array else prompts[0],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


async def stream(session, url, payload, errs):
    async with session.post(url + "/v1/completions", json=payload) as resp:
        if resp.status != 200:
            raise RuntimeError("status %d" % resp.status)
        async for line in resp.content:
            if not line.startswith(b"data: {"):
                continue
            now = time.time_ns()
            chunk = json.loads(line[6:])
            for ch in chunk["choices"]:
                if ch["text"]:
                    errs.append(now - int(ch["text"]))


def quantile(xs, q):
    i = min(len(xs) - 1, max(0, int(q * len(xs) + 0.5) - 1))
    return xs[i]


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--mode", default="routed", choices=["routed", "array"])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--prompt-len", type=int, default=16)
    a = ap.parse_args()
    reqs, per = (1, a.n) if a.mode == "array" else (a.n, 1)
    payloads = [body(r * per, per, a.prompt_len, a.tokens, a.mode == "array") for r in range(reqs)]
    errs = []
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.monotonic_ns()
        await asyncio.gather(*(stream(session, a.url, p, errs) for p in payloads))
        wall = time.monotonic_ns() - t0
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
    want = a.n * a.tokens
    if len(errs) != want:
        sys.exit("paced_client.py: %d token chunks, want %d" % (len(errs), want))
    errs.sort()
    cpu = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) * 1e9
    print(json.dumps({
        "client": "asyncio", "mode": a.mode, "n": a.n, "tokens": len(errs),
        "stream_cpu_ns": int(cpu), "wall_ns": wall,
        "err_p50_us": quantile(errs, 0.5) / 1e3, "err_p99_us": quantile(errs, 0.99) / 1e3,
        "err_max_us": errs[-1] / 1e3,
    }))


if __name__ == "__main__":
    asyncio.run(main())
