"""Adapters for vector stores: Chroma (:mod:`.chroma`), LangChain (:mod:`.langchain`) and
FAISS (:mod:`.faiss`). ``PrivateEmbedding`` itself is the Chroma and LangChain adapter;
these modules hold registration, configuration-drift checks and index helpers."""
