"""A Conformer encoder (Gulati et al., 2020), written here so that the examples and tests need no audio library.

It follows the layout and the call of `torchaudio.models.Conformer` (whose releases stopped matching torch's), so an
audit of either reads the same: `Conformer(input_dim, num_heads, ffn_dim, num_layers, depthwise_conv_kernel_size)`,
`forward(input, lengths) -> (output, lengths)` with `input` of shape (batch, frames, input_dim) and `lengths` the
number of valid frames of each sequence; the submodules carry the same names (`conformer_layers.0.conv_module
.sequential.2` is the depthwise convolution). Each block is a half-step feed-forward module, self-attention over the
valid frames, a convolution module, a second half-step feed-forward module and a layer norm.
"""
import torch
from torch import nn


class _FeedForwardModule(nn.Module):
    def __init__(self, input_dim, hidden_dim, dropout=0.0):
        super().__init__()
        self.sequential = nn.Sequential(nn.LayerNorm(input_dim), nn.Linear(input_dim, hidden_dim, bias=True), nn.SiLU(),
                                        nn.Dropout(dropout), nn.Linear(hidden_dim, input_dim, bias=True),
                                        nn.Dropout(dropout))

    def forward(self, x):
        return self.sequential(x)


class _ConvolutionModule(nn.Module):
    """Pointwise convolution and GLU, a depthwise convolution along the frames, norm, SiLU, pointwise convolution."""

    def __init__(self, input_dim, num_channels, depthwise_kernel_size, dropout=0.0):
        super().__init__()
        if (depthwise_kernel_size - 1) % 2 != 0:
            raise ValueError("depthwise_kernel_size must be odd to keep the number of frames")
        self.layer_norm = nn.LayerNorm(input_dim)
        self.sequential = nn.Sequential(
            nn.Conv1d(input_dim, 2 * num_channels, 1, stride=1, padding=0, bias=True),
            nn.GLU(dim=1),
            nn.Conv1d(num_channels, num_channels, depthwise_kernel_size, stride=1,
                      padding=(depthwise_kernel_size - 1) // 2, groups=num_channels, bias=True),
            nn.BatchNorm1d(num_channels),
            nn.SiLU(),
            nn.Conv1d(num_channels, input_dim, kernel_size=1, stride=1, padding=0, bias=True),
            nn.Dropout(dropout),
        )

    def forward(self, x):  # x: (batch, frames, input_dim)
        return self.sequential(self.layer_norm(x).transpose(1, 2)).transpose(1, 2)


class ConformerLayer(nn.Module):
    def __init__(self, input_dim, ffn_dim, num_attention_heads, depthwise_conv_kernel_size, dropout=0.0):
        super().__init__()
        self.ffn1 = _FeedForwardModule(input_dim, ffn_dim, dropout=dropout)
        self.self_attn_layer_norm = nn.LayerNorm(input_dim)
        self.self_attn = nn.MultiheadAttention(input_dim, num_attention_heads, dropout=dropout)
        self.self_attn_dropout = nn.Dropout(dropout)
        self.conv_module = _ConvolutionModule(input_dim, input_dim, depthwise_conv_kernel_size, dropout=dropout)
        self.ffn2 = _FeedForwardModule(input_dim, ffn_dim, dropout=dropout)
        self.final_layer_norm = nn.LayerNorm(input_dim)

    def forward(self, x, key_padding_mask):  # x: (frames, batch, input_dim), as nn.MultiheadAttention takes it
        x = x + 0.5 * self.ffn1(x)
        h = self.self_attn_layer_norm(x)
        h, _ = self.self_attn(h, h, h, key_padding_mask=key_padding_mask, need_weights=False)
        x = x + self.self_attn_dropout(h)
        x = x + self.conv_module(x.transpose(0, 1)).transpose(0, 1)
        x = x + 0.5 * self.ffn2(x)
        return self.final_layer_norm(x)


class Conformer(nn.Module):
    def __init__(self, input_dim, num_heads, ffn_dim, num_layers, depthwise_conv_kernel_size, dropout=0.0):
        super().__init__()
        self.conformer_layers = nn.ModuleList(
            [ConformerLayer(input_dim, ffn_dim, num_heads, depthwise_conv_kernel_size, dropout=dropout)
             for _ in range(num_layers)])

    def forward(self, input, lengths):
        frames = input.size(1)
        padding = torch.arange(frames, device=lengths.device).expand(lengths.size(0), frames) >= lengths.unsqueeze(1)
        x = input.transpose(0, 1)
        for layer in self.conformer_layers:
            x = layer(x, padding)
        return x.transpose(0, 1), lengths
