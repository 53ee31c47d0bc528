"""The other side of the wire: a server that follows SGLang 0.5.23's native HTTP API (no GPU).

It is not the code under test. It checks request bodies the way SGLang's request types do and answers
in SGLang's response shapes, so the client and the weight transports run for real over HTTP (and, for
the NCCL path, over a real torch.distributed group, gloo here). Shapes, from SGLang 0.5.23
(``sglang/srt/managers/io_struct.py``, ``sglang/srt/entrypoints/http_server.py``):

- ``POST /generate`` {input_ids, sampling_params{temperature, top_p, max_new_tokens, stop, sampling_seed},
  return_logprob, logprob_start_len} -> {text, output_ids, meta_info{id, finish_reason{type, ...},
  prompt_tokens, completion_tokens, weight_version, output_token_logprobs: [[logprob, token_id, text]]}}
- ``POST /update_weights_from_disk`` {model_path, abort_all_requests, weight_version} -> {success, message,
  num_paused_requests}
- ``POST /update_weights_from_tensor`` {serialized_named_tensors: [base64 str per TP rank], load_format,
  flush_cache, abort_all_requests, weight_version} -> {success, message}; HTTP 400 when not successful
- ``POST /init_weights_update_group`` {master_address, master_port, rank_offset, world_size, group_name,
  backend} -> {success, message}; each TP rank joins as rank_offset + tp_rank
- ``POST /update_weights_from_distributed`` {names, dtypes, shapes, group_name, flush_cache,
  abort_all_requests, weight_version, load_format} -> {success, message}; tensors arrive by
  ``broadcast(src=0)`` in the order of ``names``
- ``POST /destroy_weights_update_group`` {group_name} -> {success, message}

Run as a process (the NCCL test needs its own): ``python -m tests.sglang_fake PORT``.
"""

from __future__ import annotations

import asyncio
import base64
import io
import pickle
import sys
from typing import Any

import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from clawgym.rl.trainer.transport import join_update_group

TOOL_TEXT = '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>'
SERVING_DTYPE = torch.bfloat16


def _fail(message: str) -> JSONResponse:
    return JSONResponse({"success": False, "message": message}, status_code=400)


def fake_sglang(tokenizer: Any = None) -> tuple[FastAPI, list[dict]]:
    app = FastAPI()
    seen: list[dict] = []
    state: dict[str, Any] = {"weight_version": "0", "weights": {}, "groups": {}, "flushes": 0}
    app.state.sglang = state

    @app.get("/health")
    async def health():
        return {}

    @app.post("/generate")
    async def generate(request: Request):
        body = await request.json()
        seen.append(body)
        if not isinstance(body.get("input_ids"), list) or "text" in body:
            return JSONResponse({"error": "expected input_ids"}, status_code=400)
        params = body["sampling_params"]
        if body["input_ids"] == [0]:
            return {"text": "", "output_ids": [], "meta_info": {"finish_reason": {"type": "abort", "message": "bad"}}}
        ids = tokenizer(TOOL_TEXT, add_special_tokens=False)["input_ids"][: params["max_new_tokens"]]
        finish = {"type": "length", "length": len(ids)} if len(ids) == params["max_new_tokens"] else {"type": "stop", "matched": 2}
        pairs = [[-0.5 - i / 10, token, None] for i, token in enumerate(ids)]
        meta = {"id": "r1", "finish_reason": finish, "prompt_tokens": len(body["input_ids"]),
                "completion_tokens": len(ids), "weight_version": state["weight_version"]}
        if body.get("return_logprob"):
            meta["output_token_logprobs"] = pairs
        return {"text": tokenizer.decode(ids), "output_ids": ids, "meta_info": meta}

    @app.post("/update_weights_from_disk")
    async def update_from_disk(request: Request):
        body = await request.json()
        seen.append(body)
        if body["model_path"] == "/missing":
            return {"success": False, "message": "no such checkpoint"}
        state["weight_version"] = body["weight_version"]
        return {"success": True, "message": "ok", "num_paused_requests": 0}

    def _loaded(named: list[tuple[str, torch.Tensor]], body: dict) -> None:
        for name, tensor in named:
            state["weights"][name] = tensor.clone()
        if body.get("flush_cache", True):
            state["flushes"] += 1
        if body.get("weight_version") is not None:
            state["weight_version"] = body["weight_version"]

    @app.post("/update_weights_from_tensor")
    async def update_from_tensor(request: Request):
        body = await request.json()
        seen.append({k: v for k, v in body.items() if k != "serialized_named_tensors"} | {"ranks": len(body["serialized_named_tensors"])})
        payloads = body["serialized_named_tensors"]
        if not isinstance(payloads, list) or not payloads:
            return _fail("serialized_named_tensors must be a list with one entry per TP rank")
        named = pickle.loads(base64.b64decode(payloads[0]))  # rank 0's copy (each rank unwraps its own)
        if any(t.dtype != SERVING_DTYPE for _, t in named):
            return _fail(f"tensors must arrive in the serving dtype {SERVING_DTYPE}")
        _loaded(named, body)
        return {"success": True, "message": "Succeeded to update model weights."}

    @app.post("/init_weights_update_group")
    async def init_group(request: Request):
        body = await request.json()
        seen.append(body)
        rank = body["rank_offset"] + 0  # one TP rank here
        try:
            group = await asyncio.to_thread(join_update_group, body["master_address"], body["master_port"], rank,
                                            body["world_size"], body["group_name"], body["backend"], 60.0)
        except Exception as exc:  # noqa: BLE001 - reported like SGLang does
            return _fail(f"Failed to initialize custom process group: {exc}.")
        state["groups"][body["group_name"]] = group
        return {"success": True, "message": "Succeeded to initialize custom process group."}

    @app.post("/update_weights_from_distributed")
    async def update_from_distributed(request: Request):
        body = await request.json()
        seen.append(body)
        group = state["groups"].get(body.get("group_name", "weight_update_group"))
        if group is None:
            return _fail("Please call `init_weights_update_group` first.")
        if not (len(body["names"]) == len(body["dtypes"]) == len(body["shapes"])):
            return _fail("names, dtypes and shapes differ in length")

        def receive() -> list[tuple[str, torch.Tensor]]:
            out, handles = [], []
            for name, dtype, shape in zip(body["names"], body["dtypes"], body["shapes"]):
                tensor = torch.empty(shape, dtype=getattr(torch, dtype))
                handles.append(torch.distributed.broadcast(tensor, src=0, group=group, async_op=True))
                out.append((name, tensor))
            for handle in handles:
                handle.wait()
            return out

        _loaded(await asyncio.to_thread(receive), body)
        return {"success": True, "message": "Succeeded to update parameter online."}

    @app.post("/destroy_weights_update_group")
    async def destroy_group(request: Request):
        body = await request.json()
        group = state["groups"].pop(body.get("group_name", "weight_update_group"), None)
        if group is None:
            return _fail("The group to be destroyed does not exist.")
        torch.distributed.destroy_process_group(group)
        return {"success": True, "message": "Succeeded to destroy custom process group."}

    @app.get("/debug/weights")  # test-only: what the "model" holds now, to compare exactly
    async def weights():
        buffer = io.BytesIO()
        torch.save({"weights": state["weights"], "version": state["weight_version"], "flushes": state["flushes"]}, buffer)
        return {"data": base64.b64encode(buffer.getvalue()).decode()}

    return app, seen


def main() -> None:
    import uvicorn

    app, _ = fake_sglang()
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
