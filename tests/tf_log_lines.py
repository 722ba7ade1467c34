"""Lines TensorFlow's start-up writes to stderr, as the filters of albert_tf.core.startup see
them: the notices they hide and real messages they must keep."""

CUINIT_ERROR = (b"E0000 00:00:1795996206.822321    3772 cuda_platform.cc:52] failed call to "
                b"cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
INFO = (b"I0000 00:00:1795996204.699463    3772 cudart_stub.cc:31] Could not find cuda drivers "
        b"on your machine, GPU will not be used.\n")
ABSL = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
INSTRUCTIONS = (b"To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, "
                b"in other operations, rebuild TensorFlow with the appropriate compiler flags.\n")
# Real messages.
OTHER_ERROR = b"E0412 10:11:12.123456    3772 gpu_device.cc:12] out of memory\n"
FATAL = b"F0000 00:00:1795996206.822321    3772 port.cc:1] Check failed: x == y\n"
WARNING = b"W0000 00:00:1795996206.822321    3772 port.cc:148] TF_ENABLE_ONEDNN_OPTS is not\n"
PYTHON_WARNING = b"<string>:1: UserWarning: I0000 in a message\n"
