// test_gpu.cpp: (being written)
