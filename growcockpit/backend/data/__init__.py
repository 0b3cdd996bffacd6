"""The text a run trains on: the corpus, its tokenizer, the token cache and the batches."""
