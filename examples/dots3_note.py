"""The bug `vllm-sp-base audit` finds (vLLM PR #52172), in one file:
`vllm-sp-base audit examples/dots3_note.py` (the README's first command)."""

from torch import nn


def shard(x):
    return x


class DeepseekV2Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.use_sequence_parallel = cfg.sp
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(cfg.num_layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return shard(x) if self.use_sequence_parallel else x  # AttributeError for Dots3NoteModel


class Dots3NoteModel(DeepseekV2Model):
    def __init__(self, cfg):
        nn.Module.__init__(self)  # skips DeepseekV2Model.__init__
