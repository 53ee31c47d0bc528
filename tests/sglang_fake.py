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
- ``POST /load_lora_adapter`` {lora_name, lora_path, pinned} -> {success, error_message, loaded_adapters:
  {name: path}} (``LoadLoRAAdapterReqInput`` / ``LoRAUpdateOutput``), HTTP 400 when not successful: a name
  already loaded, a directory that is not a peft adapter, a rank above ``--max-lora-rank``, or a server
  started without ``--enable-lora``
- ``POST /unload_lora_adapter`` {lora_name} -> the same output; an unknown name fails. ``/generate`` takes
  ``lora_path`` (the loaded name) and answers HTTP 400 {error: {message}} for a name not loaded.

Run as a process (the NCCL test needs its own): ``python -m tests.sglang_fake PORT``.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from clawgym.rl.trainer.transport import join_update_group

TOOL_TEXT = '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>'
SERVING_DTYPE = torch.bfloat16


def _fail(message: str) -> JSONResponse:
    return JSONResponse({"success": False, "message": message}, status_code=400)


def fake_sglang(tokenizer: Any = None, max_lora_rank: int | None = None) -> tuple[FastAPI, list[dict]]:
    """``max_lora_rank``: as if launched with ``--enable-lora --max-lora-rank N`` (None: without LoRA)."""
    app = FastAPI()
    seen: list[dict] = []
    state: dict[str, Any] = {"weight_version": "0", "weights": {}, "groups": {}, "flushes": 0, "loras": {}}
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
        lora = body.get("lora_path")
        if lora is not None and lora not in state["loras"]:
            message = f"The following requested LoRA adapters are not loaded: {lora}"
            return JSONResponse({"error": {"message": message}}, status_code=400)
        if body["input_ids"] == [0]:
            return {"text": "", "output_ids": [], "meta_info": {"finish_reason": {"type": "abort", "message": "bad"}}}
        ids = tokenizer(TOOL_TEXT, add_special_tokens=False)["input_ids"][: params["max_new_tokens"]]
        finish = ({"type": "length", "length": len(ids)}
                  if len(ids) == params["max_new_tokens"] else {"type": "stop", "matched": 2})
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
        seen.append(
            {k: v for k, v in body.items()
             if k != "serialized_named_tensors"} | {"ranks": len(body["serialized_named_tensors"])})
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

    def _lora_result(success: bool, error: str | None = None) -> JSONResponse:
        loaded = {name: lora["path"] for name, lora in state["loras"].items()}
        body = {"success": success, "error_message": error, "loaded_adapters": loaded}
        return JSONResponse(body, status_code=200 if success else 400)

    @app.post("/load_lora_adapter")
    async def load_lora(request: Request):
        body = await request.json()
        seen.append(body)
        name, path = body.get("lora_name"), body.get("lora_path")
        if max_lora_rank is None:
            return _lora_result(False, "LoRA is not enabled. Please set `--enable-lora` to `True`.")
        if not name or not path:
            return _lora_result(False, "lora_name and lora_path are required")
        if name in state["loras"]:
            return _lora_result(False, f"LoRA with name {name} already exists")
        try:
            from safetensors.torch import load_file

            config = json.loads((Path(path) / "adapter_config.json").read_text())
            tensors = load_file(str(Path(path) / "adapter_model.safetensors"))
        except (OSError, ValueError) as exc:
            return _lora_result(False, f"Failed to load LoRA adapter {name} from {path}: {exc}")
        if config.get("peft_type") != "LORA" or config["r"] > max_lora_rank:
            return _lora_result(False,
                                f"LoRA adapter {name}: rank {config.get('r')} exceeds --max-lora-rank {max_lora_rank}")
        bad = [k for k, t in tensors.items()
               if (".lora_A." not in k and ".lora_B." not in k) or config["r"] not in t.shape]
        if bad:
            return _lora_result(False, f"LoRA adapter {name}: unexpected tensors {bad[:3]}")
        state["loras"][name] = {"path": path, "config": config, "tensors": tensors}
        return _lora_result(True)

    @app.post("/unload_lora_adapter")
    async def unload_lora(request: Request):
        body = await request.json()
        seen.append(body)
        if state["loras"].pop(body.get("lora_name"), None) is None:
            return _lora_result(False, f"LoRA with name {body.get('lora_name')} does not exist")
        return _lora_result(True)

    @app.get("/debug/weights")  # test-only: what the "model" holds now, to compare exactly
    async def weights():
        buffer = io.BytesIO()
        loras = {name: lora["tensors"] for name, lora in state["loras"].items()}
        torch.save({"weights": state["weights"], "version": state["weight_version"], "flushes": state["flushes"],
                    "loras": loras}, buffer)
        return {"data": base64.b64encode(buffer.getvalue()).decode()}

    return app, seen


def main() -> None:
    import uvicorn

    app, _ = fake_sglang()
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
