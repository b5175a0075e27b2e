"""Ray Data: protect and store documents on a cluster (``pip install 'private-vectors[ray]'``).

A job is ``read → protect_dataset(ds, config, sink)``::

    import ray
    from private_vectors.integrations.ray import ChromaDatasink, SecretRef, protect_dataset

    config = embedding.get_config()  # JSON: no key, no seed
    ds = ray.data.read_parquet("corpus/")  # columns: id, text
    protect_dataset(ds, config, ChromaDatasink("notes", host="chroma.internal", port=8000),
                    secret=SecretRef(env="PRIVATE_VECTORS_KEY"), batch_size=256, concurrency=2, num_cpus=1)

:func:`protect_dataset` runs the text stage's two steps as one job: ``map_batches(DetectDocuments)``
(detection, cached in the rows, and keyed facts), a commutative merge of the facts on the driver
into the job's frozen entity index, then ``map_batches(ProtectDocuments, job=...)`` (replacement,
encoding and noise against it) and the sink. The stored texts, vectors and entity index are those
of one process protecting the whole dataset in one call, whatever the partitioning and order.

**The key never travels through Ray.** :class:`ProtectDocuments` gets the embedding's JSON
configuration and a :class:`SecretRef` — the *name* of an environment variable set outside Ray
(in the shell or service that runs ``ray start`` on each node) or the *path* of a file readable
on the workers — and reads the key itself when its actor starts. Nothing that holds key
material, not even a derived subkey, is a task argument, an actor argument, an object in Ray's
object store or part of a ``runtime_env`` (which Ray keeps in its control store and shows on its
dashboard): pass a key through ``runtime_env={"env_vars": ...}`` and it is in all three places.

Per worker: one ``PrivateEmbedding`` per actor (model, text stage), built once from the
configuration. Global: the job's frozen entity index (HMACs and labels: an entity detected in
one document is replaced wherever it appears in the job; a word the job writes in lower case in
two texts is an ordinary word; a strong entry beats a weak one; of two labels, the one more
spans gave, then the first in sorted order), the store, and its entity index, which only the sink's driver-side
``on_write_complete`` writes (one writer). ``ProtectDocuments`` alone (one map, no ``job``)
makes each batch a job of its own: which occurrences of an entity *missed by the detectors* are
replaced then depends on partitioning.

Rows out of :class:`ProtectDocuments`: ``id``, ``document`` (the sanitized text; empty when no
text is stored), ``embedding`` (float32), ``metadata`` (JSON: the row's metadata and its
encrypted restore record under ``pv_restore``) and ``pv_index`` (the keyed index entries of the
batch's replaced spans, JSON, on the batch's first row). Sinks: :class:`ChromaDatasink` (a Chroma server
through ``HttpClient``, upsert by id), :class:`ParquetDatasink` and :class:`FaissShardDatasink`
(one file per block, named by a hash of its ids: a retried task rewrites the same file).
Writes are idempotent, so a failed job is resumed by running it again (the same documents: the
same job index, the same rows). Filtering out what a sink's :meth:`stored_ids` already holds
makes the rest a new job, which reads the stored entity index (``index_state``) and never
rewrites the documents already stored.

Raw text passes through Ray's object store (the input blocks, and the first step's materialized
rows with their cached spans) and may be spilled to the local
disk of a node (``/tmp/ray/session_*/ray_spilled_objects`` by default). Point spilling at an
encrypted volume with ``ray.init(_system_config={"object_spilling_config": json.dumps({"type":
"filesystem", "params": {"directory_path": "/encrypted/spill"}})})`` (or ``ray start
--system-config``), or keep raw text out of the object store by reading it inside the map.
"""

from __future__ import annotations

from .ray_secrets import SecretRef
from .ray_sinks import ChromaDatasink, FaissShardDatasink, FaissShards, ParquetDatasink
from .ray_stages import (
    DetectDocuments,
    ProtectDocuments,
    job_index_changes,
    merge_index_changes,
    protect_dataset,
)

__all__ = ["ChromaDatasink", "DetectDocuments", "FaissShardDatasink", "FaissShards", "ParquetDatasink",
           "ProtectDocuments", "SecretRef", "job_index_changes", "merge_index_changes", "protect_dataset"]
