// test_attention.cpp: (being written)
