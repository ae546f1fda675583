// test_softmax.cpp: (being written)
