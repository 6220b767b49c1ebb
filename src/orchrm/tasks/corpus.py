"""A local document collection with BM25 retrieval (bm25s): what the `search` agent reads."""

from __future__ import annotations

from pydantic import BaseModel


class Document(BaseModel):
    id: str
    text: str


class Corpus:
    """Documents indexed with BM25 (English stopwords removed). `search` returns (doc_id, text) pairs."""

    def __init__(self, documents: list[Document]) -> None:
        import bm25s

        self.documents = documents
        self._bm25s = bm25s
        self._index = bm25s.BM25()
        tokens = bm25s.tokenize([d.text for d in documents], stopwords="en", show_progress=False)
        self._index.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[tuple[str, str]]:
        if not query.strip():
            return []
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.documents))
        results, scores = self._index.retrieve(tokens, k=k, show_progress=False)
        return [
            (self.documents[int(i)].id, self.documents[int(i)].text)
            for i, s in zip(results[0], scores[0], strict=True)
            if s > 0
        ]
