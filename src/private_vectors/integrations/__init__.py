"""Adapters for vector stores: Chroma (:mod:`.chroma`), LangChain (:mod:`.langchain`) and
FAISS (:mod:`.faiss`), and for Ray Data (:mod:`.ray`, scale-out). ``PrivateEmbedding`` itself
is the Chroma and LangChain adapter; these modules hold registration, configuration-drift
checks, index helpers and the Ray Data callable class and sinks."""
