// test_parse.cpp: (being written)
