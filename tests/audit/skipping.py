"""A base that sets what its forward reads, and a subclass that skips its
``__init__``: the smallest project with one finding (``pkg.model.Model``)."""

BASE = """\
from torch import nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = 1

    def forward(self):
        return self.flag
"""
MODEL = """\
from torch import nn

from pkg.base import Base


class Model(Base):
    def __init__(self):
        nn.Module.__init__(self)
"""
