import json
import sys

import chromadb

from private_vectors import PrivateEmbedding
from private_vectors.integrations.chroma import add_documents
from private_vectors.text import Sanitizer
from private_vectors.text.recognizers.concept import TokenDetector
from private_vectors.text.recognizers.names import NameDetector
from private_vectors.text.recognizers.regex import RegexDetector

K = "fixture-key-Qm7v2Lx9Tb4Wz8Rk"
d = sys.argv[1]
def ef():
    san = Sanitizer("PII", policy="redact", key=K, allow_list=["Acme Zorbatron"],
                    detectors=[RegexDetector(), NameDetector(), TokenDetector(["Projectquill"], label="PROJECT")])
    return PrivateEmbedding(model="fake:32", eps=10, key=K, sanitize=san)
col = chromadb.PersistentClient(path=d).create_collection("old", embedding_function=ef())
print(add_documents(col, ids=["d0", "d1"], documents=["Amelia Okafor met Acme Zorbatron about Projectquill.",
                                                       "Call Amelia Okafor at amelia.okafor@example.com."]))
print(json.dumps(col.configuration_json)[:3000])
print(col.metadata)
