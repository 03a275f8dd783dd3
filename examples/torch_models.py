"""Three models written in plain PyTorch, for the examples and tests of spyre_halide.compile.

Nothing here imports the project: these are the modules a PyTorch user already has, written
so torch.fx.symbolic_trace can trace them (shapes and split pieces indexed, not unpacked).
- DecoderBlock: a GPT-style pre-norm decoder block (causal multi-head attention written
  out as matmul, scale, additive causal mask, softmax, matmul; a tanh-GELU MLP; residuals);
- MLP: Linear-SiLU-Linear-ReLU-Linear with an RMSNorm written the usual way;
- ConvBlock: a small CNN block (3x3 convolutions with ReLU, a max-pool, a 1x1 head).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, max_tokens):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        mask = torch.full((max_tokens, max_tokens), float("-inf")).triu(1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        batch, tokens, dim = x.shape[0], x.shape[1], x.shape[2]
        head_dim = dim // self.heads
        qkv = self.qkv(x).split(dim, dim=2)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q.reshape(batch, tokens, self.heads, head_dim).transpose(1, 2)
        k = k.reshape(batch, tokens, self.heads, head_dim).transpose(1, 2)
        v = v.reshape(batch, tokens, self.heads, head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        scores = scores + self.mask  # a causal mask for exactly max_tokens tokens
        y = F.softmax(scores, dim=-1) @ v
        y = y.transpose(1, 2).reshape(batch, tokens, dim)
        return self.proj(y)


class DecoderBlock(nn.Module):
    def __init__(self, dim=128, heads=4, max_tokens=64):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, max_tokens)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU(approximate="tanh")
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class MLP(nn.Module):
    def __init__(self, dim=96, hidden=256, classes=10):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = F.silu(self.fc1(self.norm(x)))
        h = torch.relu(self.fc2(h))
        return self.head(h)


class ConvBlock(nn.Module):
    def __init__(self, channels=3, width=32, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.head(self.pool(x))
