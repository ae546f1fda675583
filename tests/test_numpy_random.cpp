// test_numpy_random.cpp: (being written)
