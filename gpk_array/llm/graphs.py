"""CUDA graphs of an Engine's step functions (gpk_array/llm/engine.py): captured once per key, replayed after."""


class CudaGraphs:
    """CUDA graphs of step functions, captured on first use per key and replayed after.

    A step function reads and writes only arrays that outlive it (static inputs, outputs, the KV cache); its
    temporaries come from a private memory pool that nothing else allocates from, so the addresses the graph
    recorded stay its own across replays.
    """

    def __init__(self):
        import cupy
        self._cp = cupy
        self.pool = cupy.cuda.MemoryPool()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.graphs = {}

    def run(self, key, fn):
        """Run the step ``fn`` as the CUDA graph stored under ``key``: on the first call for a key, ``fn`` runs once
        eagerly (warm-up) and once under capture on this object's stream and private pool; every call replays the
        graph on the current stream."""
        cp = self._cp
        graph = self.graphs.get(key)
        if graph is None:
            cp.cuda.get_current_stream().synchronize()
            with cp.cuda.using_allocator(self.pool.malloc), self.stream:
                fn()  # warm-up: compiles kernels and fills the pool; a step is idempotent, so running it twice is fine
                self.stream.begin_capture()
                try:
                    fn()
                finally:
                    graph = self.stream.end_capture()
                graph.upload(self.stream)
            self.stream.synchronize()
            self.graphs[key] = graph
        graph.launch(stream=cp.cuda.get_current_stream())
