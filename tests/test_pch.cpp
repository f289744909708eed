// The translation unit that compiles the test binaries' shared precompiled
// header (tests/CMakeLists.txt); it defines nothing.
