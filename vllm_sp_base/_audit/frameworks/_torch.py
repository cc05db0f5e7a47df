"""torch: ``module(x)`` runs ``forward`` through ``Module.__call__`` (unless a
class overrides ``__call__``: the core reads that); ``tensor.to(device)`` runs
a ``Tensor`` subclass's ``to`` (``_to_copy``: ``model.to(device)`` on what
holds torchao's quantized weights); a training loop runs an optimizer's
``zero_grad`` and ``step`` on every iteration, and torch's ``zero_grad``
wraps the class's ``step`` (``_patch_step_function``) in a wrapper that
reads the hook dictionaries ``Optimizer.__init__`` sets; a checkpointing loop
saves and loads its state (``state_dict``, ``load_state_dict``: a feature,
not every use); it steps a learning-rate scheduler (``step`` reads
``_step_count``, which ``LRScheduler.__init__`` sets: funasr 1.4.16's
``TriStageLR`` ran it only from a method nothing calls); it indexes a
dataset (``dataset[i]``: ``__getitem__``; cogdl 0.6's ``OGBLDataset`` skipped
the ``Dataset.__init__`` that sets ``transform``) or iterates an iterable one. Before
``Module.__init__`` has run, a module refuses a submodule, a parameter or a
buffer (``cannot assign module before Module.__init__() call``): it looks for
the dictionaries ``Module.__init__`` sets."""

from __future__ import annotations

from vllm_sp_base._audit.frameworks._model import Driven, Framework, Refusal, Wrapper

TORCH = Framework(
    "torch",
    module_entry_points=("forward", "__call__"),
    feature_entry_points=("to", "state_dict", "load_state_dict"),
    driven=(
        Driven("torch._tensor.Tensor", ("to",)),
        Driven("torch.optim.optimizer.Optimizer", ("zero_grad", "step", "state_dict", "load_state_dict"), wrappers=(
            Wrapper("step", by="profile_hook_step",
                    reads=("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks"),
                    installed_by=("zero_grad",)),
        )),
        Driven("torch.optim.lr_scheduler.LRScheduler", ("step",)),
        Driven("torch.utils.data.dataset.Dataset", ("__getitem__",)),
        Driven("torch.utils.data.dataset.IterableDataset", ("__iter__",)),
    ),
    refusals=(
        Refusal(
            "torch.nn.modules.module.Module",
            calls=(("register_buffer", ("_buffers",)), ("register_parameter", ("_parameters",)),
                   ("add_module", ("_modules",)), ("register_module", ("_modules",))),
            assigned=(("torch.nn.modules.module.Module", ("_modules",)),
                      ("torch.nn.parameter.Parameter", ("_parameters",))),
        ),
    ),
)
