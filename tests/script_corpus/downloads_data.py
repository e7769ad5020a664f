"""A script that downloads its data first (with no network here, the download fails)."""

import urllib.request

urllib.request.urlopen("http://example.invalid/mnist.npz", timeout=5)
