// test_output.cpp: (being written)
