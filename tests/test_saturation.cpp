// test_saturation.cpp: (being written)
