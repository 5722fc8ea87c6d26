"""Fused neural-network ops (linear + bias + activation, layer norm, softmax, attention) on both devices."""
__all__ = []
