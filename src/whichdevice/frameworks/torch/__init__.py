"""PyTorch adapter (matmul and seed 001's MLP in plain torch). Import the modules, not this
package, in the parent process: ``env`` is the only one that does not import torch.
``keras_torch`` reuses these modules."""
