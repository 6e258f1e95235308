# Included at the end of llama.cpp's own project() when llama-cpp-python compiles it (the Makefile passes
# -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>). The Python package loads libllama and libggml only, so
# llama.cpp's `common` library (chat parsers, argument parsing, an HTTP client: 53 of the 178 objects, about a
# third of the compile) is not built. llama-cpp-python forces LLAMA_BUILD_COMMON ON in the cache; a normal
# variable in llama.cpp's scope shadows it (its option() leaves it as set: policy CMP0077). Nothing that goes
# into libllama or libggml changes, nor how it is compiled.
set(LLAMA_BUILD_COMMON OFF)
