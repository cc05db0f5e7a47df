from vllm_sp_base._main import console

console()
