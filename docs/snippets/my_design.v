// A plain Verilog design that uses a 4-leaf circuit tree written by
//   fattree verilog circuit-tree --ports axis -p leaves=4 -o circuit_tree_axis.v
// Leaf 0 is this design's own port; leaves 1-3 are tied off (never send, always ready).
module my_design (
    input  wire       clk,
    input  wire       resetn,
    // frames from leaf 0 into the network: 2 beats of 8 bits, tdest read on the first
    input  wire [7:0] in_tdata,
    input  wire [1:0] in_tdest,
    input  wire       in_tlast,
    input  wire       in_tvalid,
    output wire       in_tready,
    // frames the network delivers to leaf 0
    output wire [7:0] out_tdata,
    output wire       out_tlast,
    output wire       out_tvalid,
    input  wire       out_tready
);
    circuit_tree_axis net (
        .aclk(clk),
        .aresetn(resetn),
        .s_axis_0_tdata(in_tdata), .s_axis_0_tdest(in_tdest), .s_axis_0_tlast(in_tlast),
        .s_axis_0_tvalid(in_tvalid), .s_axis_0_tready(in_tready),
        .m_axis_0_tdata(out_tdata), .m_axis_0_tlast(out_tlast),
        .m_axis_0_tvalid(out_tvalid), .m_axis_0_tready(out_tready),
        .dropped_0(),
        .s_axis_1_tdata(8'd0), .s_axis_1_tdest(2'd0), .s_axis_1_tlast(1'b0),
        .s_axis_1_tvalid(1'b0), .s_axis_1_tready(),
        .m_axis_1_tdata(), .m_axis_1_tlast(), .m_axis_1_tvalid(), .m_axis_1_tready(1'b1),
        .dropped_1(),
        .s_axis_2_tdata(8'd0), .s_axis_2_tdest(2'd0), .s_axis_2_tlast(1'b0),
        .s_axis_2_tvalid(1'b0), .s_axis_2_tready(),
        .m_axis_2_tdata(), .m_axis_2_tlast(), .m_axis_2_tvalid(), .m_axis_2_tready(1'b1),
        .dropped_2(),
        .s_axis_3_tdata(8'd0), .s_axis_3_tdest(2'd0), .s_axis_3_tlast(1'b0),
        .s_axis_3_tvalid(1'b0), .s_axis_3_tready(),
        .m_axis_3_tdata(), .m_axis_3_tlast(), .m_axis_3_tvalid(), .m_axis_3_tready(1'b1),
        .dropped_3()
    );
endmodule
